package journal

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// oneSegment writes xs to a fresh journal and returns its only segment.
func oneSegment(t *testing.T, xs []*decode.Exchange) string {
	t.Helper()
	dir := t.TempDir()
	writeJournal(t, dir, Options{}, xs)
	segs := segmentsIn(t, dir)
	if len(segs) != 1 {
		t.Fatalf("%d segments; want 1", len(segs))
	}
	return segs[0]
}

func TestFlippedByteLosesOnlyThatRecord(t *testing.T) {
	want := exchanges(0, 100)
	const victim = 50
	cases := []struct {
		name string
		at   func(start, end int64) int64 // offset of the byte to flip within record victim
	}{
		{"sync marker", func(s, e int64) int64 { return s + 1 }},
		{"length high byte", func(s, e int64) int64 { return s + 4 }},
		{"length low byte", func(s, e int64) int64 { return s + 7 }},
		{"checksum", func(s, e int64) int64 { return s + 9 }},
		{"record type", func(s, e int64) int64 { return s + frameLen }},
		{"middle of payload", func(s, e int64) int64 { return (s + e) / 2 }},
		{"last byte", func(s, e int64) int64 { return e - 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := oneSegment(t, want)
			offs := recordOffsets(t, path)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			at := c.at(offs[victim], offs[victim+1])
			b[at] ^= 0x40
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			got, rs := readAll(t, path)
			wantLeft := append(append([]*decode.Exchange{}, want[:victim]...), want[victim+1:]...)
			checkSame(t, got, wantLeft)
			if rs.Corrupt != 1 || len(rs.Torn) != 0 {
				t.Fatalf("corrupt %d, torn %v; want 1 corrupt record and no torn tail", rs.Corrupt, rs.Torn)
			}
			d := rs.Damaged
			if len(d) != 1 || d[0].Path != path || d[0].Offset != offs[victim] || d[0].Bytes != offs[victim+1]-offs[victim] || d[0].Cause == "" {
				t.Fatalf("damage listed %v; want record %d of %s: offset %d, %d bytes, with a cause",
					d, victim, path, offs[victim], offs[victim+1]-offs[victim])
			}
		})
	}
}

// TestDamageListBounded checks that a journal with more corrupt records than
// MaxDamageListed counts them all and lists the first MaxDamageListed.
func TestDamageListBounded(t *testing.T) {
	const n = MaxDamageListed + 5
	want := exchanges(0, 2*n)
	path := oneSegment(t, want)
	offs := recordOffsets(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		b[(offs[2*i]+offs[2*i+1])/2] ^= 0x40 // every other record, from the first
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, rs := readAll(t, path)
	if len(got) != n || rs.Corrupt != n || len(rs.Damaged) != MaxDamageListed {
		t.Fatalf("read %d, corrupt %d, listed %d; want %d read, %d corrupt, %d listed", len(got), rs.Corrupt, len(rs.Damaged), n, n, MaxDamageListed)
	}
	for i, d := range rs.Damaged {
		if d.Offset != offs[2*i] {
			t.Fatalf("damage %d at offset %d; want %d", i, d.Offset, offs[2*i])
		}
	}
}

func TestTornTailKeepsEveryCompleteRecord(t *testing.T) {
	want := exchanges(0, 20)
	cases := []struct {
		name string
		cut  func(last, end int64) int64 // new file size, given the last record's bounds
	}{
		{"inside the sync marker", func(l, e int64) int64 { return l + 2 }},
		{"inside the frame", func(l, e int64) int64 { return l + 10 }},
		{"after the frame", func(l, e int64) int64 { return l + frameLen }},
		{"inside the payload", func(l, e int64) int64 { return (l + e) / 2 }},
		{"one byte short", func(l, e int64) int64 { return e - 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := oneSegment(t, want)
			offs := recordOffsets(t, path)
			info, _ := os.Stat(path)
			last := offs[len(offs)-1]
			size := c.cut(last, info.Size())
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			got, rs := readAll(t, filepath.Dir(path))
			checkSame(t, got, want[:len(want)-1])
			if len(rs.Torn) != 1 || rs.Torn[0].Path != path || rs.Torn[0].Offset != last || rs.Torn[0].Size != size {
				t.Fatalf("torn tails %v; want one in %s at offset %d", rs.Torn, path, last)
			}
			if rs.Corrupt != 0 {
				t.Fatalf("corrupt %d; a torn tail is not a corrupt record", rs.Corrupt)
			}
			msg := rs.Torn[0].String()
			if !strings.Contains(msg, path) || !strings.Contains(msg, "torn tail at offset") {
				t.Fatalf("torn tail reads %q; want the path and the offset", msg)
			}
		})
	}
	t.Run("zeros after the last record", func(t *testing.T) {
		// A power loss can leave the file longer than what was written.
		path := oneSegment(t, want)
		info, _ := os.Stat(path)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(make([]byte, 4096))
		f.Close()
		got, rs := readAll(t, path)
		checkSame(t, got, want)
		if len(rs.Torn) != 1 || rs.Torn[0].Offset != info.Size() {
			t.Fatalf("torn tails %v; want one at offset %d", rs.Torn, info.Size())
		}
	})
}

func TestHeaderProblemsAreClearErrors(t *testing.T) {
	good := oneSegment(t, exchanges(0, 3))
	goodBytes, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	newer := append([]byte{}, goodBytes...)
	newer[9] = FormatVersion + 1
	cases := []struct {
		name    string
		content []byte
		want    error
		words   string
	}{
		{"zero-length file", nil, ErrEmptyFile, "empty file"},
		{"truncated header", goodBytes[:20], ErrTruncatedHeader, "truncated segment header"},
		{"header only half the version string", goodBytes[:headerFixedLen+2], ErrTruncatedHeader, "truncated"},
		{"not a journal", []byte("#!/bin/sh\necho not a journal\n"), ErrNotJournal, "not a kproxy journal"},
		{"unknown newer version", newer, nil, "is newer than this kproxy reads"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "bad"+SegmentExt)
			if err := os.WriteFile(path, c.content, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, arg := range []string{path, dir} {
				r, err := OpenReader(arg)
				if err == nil {
					r.Close()
					t.Fatalf("OpenReader(%s) succeeded; want an error", arg)
				}
				if c.want != nil && !errors.Is(err, c.want) {
					t.Fatalf("OpenReader(%s): got %v; want %v", arg, err, c.want)
				}
				var ve *VersionError
				if c.want == nil && !errors.As(err, &ve) {
					t.Fatalf("OpenReader(%s): got %v; want a *VersionError", arg, err)
				}
				if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.words) {
					t.Fatalf("OpenReader(%s): message %q lacks the path or %q", arg, err, c.words)
				}
			}
		})
	}
}

func TestOpenReaderPathErrors(t *testing.T) {
	empty := t.TempDir()
	cases := []struct {
		name  string
		paths []string
		want  string
	}{
		{"no paths", nil, "no journal path"},
		{"missing", []string{filepath.Join(empty, "nope")}, "no such file"},
		{"directory without segments", []string{empty}, "no journal segments"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenReader(c.paths...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v; want an error containing %q", err, c.want)
			}
		})
	}
}

func TestMergeTwoJournalsByCompletionTime(t *testing.T) {
	// Two proxies in front of one cluster: a sees the even exchanges, b
	// the odd ones, each in its own directory and segments.
	a, b := t.TempDir(), t.TempDir()
	all := exchanges(0, 300)
	var even, odd []*decode.Exchange
	for i, x := range all {
		if i%2 == 0 {
			even = append(even, x)
		} else {
			odd = append(odd, x)
		}
	}
	writeJournal(t, a, Options{SegmentBytes: 3000}, even)
	writeJournal(t, b, Options{SegmentBytes: 5000}, odd)
	got, rs := readAll(t, b, a)
	checkSame(t, got, all)
	if len(rs.Journals) != 2 || rs.Records != 300 {
		t.Fatalf("%d journals, %d records; want 2 and 300", len(rs.Journals), rs.Records)
	}
	if !rs.First.Equal(all[0].RequestAt) || !rs.Last.Equal(all[299].RequestAt) {
		t.Fatalf("span %v..%v; want %v..%v", rs.First, rs.Last, all[0].RequestAt, all[299].RequestAt)
	}
}

func TestMergeFollowsResponsesNotRequests(t *testing.T) {
	// Proxy a saw a JoinGroup held by the coordinator for 100 ms; proxy b
	// saw heartbeats answered meanwhile. One proxy would have observed the
	// heartbeats first, and so must the merge.
	a, b := t.TempDir(), t.TempDir()
	join := testExchange(0)
	join.ResponseAt = join.RequestAt.Add(100 * time.Millisecond)
	var beats []*decode.Exchange
	for i := 10; i < 100; i += 10 {
		beats = append(beats, testExchange(i))
	}
	late := testExchange(200)
	writeJournal(t, a, Options{}, []*decode.Exchange{join, late})
	writeJournal(t, b, Options{}, beats)
	got, _ := readAll(t, a, b)
	checkSame(t, got, append(append(beats, join), late))
	if !join.CompletedAt().Equal(join.ResponseAt) {
		t.Fatalf("CompletedAt %v; want the response time", join.CompletedAt())
	}
	if x := (&decode.Exchange{RequestAt: testBase}); !x.CompletedAt().Equal(testBase) {
		t.Fatalf("CompletedAt without a response %v; want the request time", x.CompletedAt())
	}
}

func TestOneJournalKeepsWriteOrder(t *testing.T) {
	// The proxy observes an exchange when its response arrives, so a long
	// JoinGroup is written after later heartbeats; replay must see the same
	// order the live proxy did.
	xs := exchanges(0, 10)
	xs[2], xs[7] = xs[7], xs[2]
	got, _ := readAll(t, oneSegment(t, xs))
	checkSame(t, got, xs)
}

func TestDirectoryAndFileListReadTheSame(t *testing.T) {
	dir := t.TempDir()
	want := exchanges(0, 150)
	writeJournal(t, dir, Options{SegmentBytes: 2500}, want)
	segs := segmentsIn(t, dir)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
	got, _ := readAll(t, append(segs, dir)...)
	checkSame(t, got, want)
}

func TestReaderStatsProgress(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, Options{SegmentBytes: 4000}, exchanges(0, 100))
	r, err := OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	total := r.Stats().Bytes
	var last int64
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		if n := r.Stats().BytesRead; n < last || n > total {
			t.Fatalf("BytesRead %d after %d, total %d; want it to grow up to the total", n, last, total)
		} else {
			last = n
		}
	}
	if st := r.Stats(); st.BytesRead != total || st.Records != 100 {
		t.Fatalf("at the end BytesRead %d of %d, %d records; want all of it and 100", st.BytesRead, total, st.Records)
	}
}

func TestReadStatsTimeSpanIgnoresOrder(t *testing.T) {
	xs := exchanges(0, 5)
	xs[0], xs[4] = xs[4], xs[0]
	_, rs := readAll(t, oneSegment(t, xs))
	if !rs.First.Equal(testBase) || !rs.Last.Equal(testBase.Add(4*time.Millisecond)) {
		t.Fatalf("span %v..%v; want %v..%v", rs.First, rs.Last, testBase, testBase.Add(4*time.Millisecond))
	}
}
