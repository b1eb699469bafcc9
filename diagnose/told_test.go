package diagnose

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestToldSet: a finding is told once, however often it is recomputed;
// findings whose IDs differ (kind, group, member or time, to the
// nanosecond) are each told; forget drops those before the cutoff only.
func TestToldSet(t *testing.T) {
	at := time.Date(2026, 12, 5, 18, 0, 0, 123456789, time.UTC)
	base := newFinding(PartitionFlap, "g", Warning, at, "")
	tests := []struct {
		name string
		f    Finding
		new  bool
	}{
		{"the same, recomputed", newFinding(PartitionFlap, "g", Warning, at, ""), false},
		{"the same instant, in another zone", newFinding(PartitionFlap, "g", Warning, at.In(time.FixedZone("x", 3600)), ""), false},
		{"another kind", newFinding(RebalanceLoop, "g", Warning, at, ""), true},
		{"another group", newFinding(PartitionFlap, "h", Warning, at, ""), true},
		{"a member", newFinding(PartitionFlap, "g", Warning, at, "m-1"), true},
		{"a nanosecond later", newFinding(PartitionFlap, "g", Warning, at.Add(1), ""), true},
		{"a second earlier", newFinding(PartitionFlap, "g", Warning, at.Add(-time.Second), ""), true},
		{"the zero time", newFinding(PartitionFlap, "g", Warning, time.Time{}, ""), true},
		{"the Unix epoch", newFinding(PartitionFlap, "g", Warning, time.Unix(0, 0), ""), true},
		{"the year 2500", newFinding(PartitionFlap, "g", Warning, time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC), ""), true},
		{"the year 2500 and a nanosecond", newFinding(PartitionFlap, "g", Warning, time.Date(2500, 1, 1, 0, 0, 0, 1, time.UTC), ""), true},
		{"the year 1500", newFinding(PartitionFlap, "g", Warning, time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), ""), true},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			s := toldSet{}
			s.add(base)
			if got := s.add(c.f); got != c.new {
				t.Errorf("add(%s) after add(%s) = %v; want %v", c.f.ID, base.ID, got, c.new)
			}
			if c.new != (c.f.ID != base.ID) {
				t.Fatalf("test case: IDs %s and %s", c.f.ID, base.ID)
			}
			if s.add(c.f) || s.add(base) {
				t.Errorf("told again")
			}
		})
	}

	// Beyond what a mark's nanoseconds hold, instants still differ.
	s := toldSet{}
	far := time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{far, far.Add(1), {}, time.Time{}.Add(1)} {
		if !s.add(newFinding(PartitionFlap, "g", Warning, at, "")) {
			t.Errorf("%s not told after other instants beyond the range", at)
		}
	}
	if s.add(newFinding(PartitionFlap, "g", Warning, far.Add(1), "")) {
		t.Errorf("%s told again", far.Add(1))
	}

	s = toldSet{}
	for i := range 5 {
		s.add(newFinding(PartitionFlap, "g", Warning, at.Add(time.Duration(i)*time.Minute), ""))
	}
	s.add(newFinding(PartitionFlap, "old", Warning, at, ""))
	s.forget(at.Add(2 * time.Minute))
	if n, groups := s.len(), len(s); n != 3 || groups != 1 {
		t.Errorf("after forget: %d told in %d groups; want the 3 at or after the cutoff, in 1", n, groups)
	}
	if s.add(newFinding(PartitionFlap, "g", Warning, at.Add(2*time.Minute), "")) {
		t.Errorf("the one at the cutoff was forgotten")
	}
	if !s.add(newFinding(PartitionFlap, "g", Warning, at.Add(time.Minute), "")) {
		t.Errorf("the one before the cutoff is remembered")
	}
}

// TestToldSetRoom: marks added in any order stay sorted by time and are
// told once; a group's slice keeps at most an eighth of spare room, after
// growing and after forget drops most of it.
func TestToldSetRoom(t *testing.T) {
	at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	var fs []Finding
	for i := range 1000 {
		fs = append(fs, newFinding(PartitionFlap, "g", Warning, at.Add(time.Duration(i)*time.Second), "m-"+strconv.Itoa(i%7)))
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	s := toldSet{}
	check := func(when string) {
		t.Helper()
		marks := s["g"]
		if !slices.IsSortedFunc(marks, compareTime) {
			t.Errorf("%s: marks not sorted by time", when)
		}
		if cap(marks) > roomFor(len(marks)) {
			t.Errorf("%s: %d marks in a slice of %d", when, len(marks), cap(marks))
		}
	}
	for i, f := range fs {
		if !s.add(f) {
			t.Fatalf("finding %d not told", i)
		}
		check("adding")
	}
	for _, f := range fs {
		if s.add(f) {
			t.Fatalf("%s told again", f.ID)
		}
	}
	s.forget(at.Add(900 * time.Second))
	if n := s.len(); n != 100 {
		t.Errorf("after forget: %d marks; want 100", n)
	}
	check("after forget")
}

// TestKindsListsEveryKind: every Kind constant of the package is in Kinds,
// whose place told's marks keep (markOf panics on a kind missing there).
func TestKindsListsEveryKind(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var consts []Kind
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
					continue
				}
				for _, v := range vs.Values {
					lit, err := strconv.Unquote(v.(*ast.BasicLit).Value)
					if err != nil {
						t.Fatal(err)
					}
					consts = append(consts, Kind(lit))
				}
			}
		}
	}
	if len(consts) < 20 {
		t.Fatalf("found %d Kind constants; the parse missed them", len(consts))
	}
	for _, k := range consts {
		if !slices.Contains(Kinds, k) {
			t.Errorf("kind %s is not in Kinds", k)
		}
	}
}
