package decode

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var update = flag.Bool("update", false, "rewrite testdata/golden and the FuzzDecode seed corpus")

// goldenCase is one scenario of one API, decoded at every version kmsg
// knows and compared with testdata/golden/<name>.json.
type goldenCase struct {
	name string
	key  int16
	// build returns the request and its response (nil for none) at
	// version v. It fills every field; kmsg writes those v has.
	build func(v int16) (kmsg.Request, kmsg.Response)
	// before, when set, is decoded first by the same Decoder (a JoinGroup
	// that tells an old SyncGroup its group's protocol type).
	before func(v int16) *Exchange
	// seed adds this case's newest version to the FuzzDecode corpus.
	seed bool
}

// goldenVersion is one version's decoded events, as rendered in a golden file.
type goldenVersion struct {
	Version int16
	Events  []Event
}

func goldenCases() []goldenCase {
	var cs []goldenCase
	cs = append(cs, groupCases()...)
	cs = append(cs, offsetCases()...)
	cs = append(cs, otherCases()...)
	cs = append(cs, shareCases()...)
	cs = append(cs, streamsCases()...)
	return cs
}

// maxVersion is the highest version kmsg knows for key.
func maxVersion(key int16) int16 { return kmsg.RequestForKey(key).MaxVersion() }

// decodeCase decodes c at version v with a fresh Decoder.
func decodeCase(t testing.TB, c goldenCase, v int16) []Event {
	t.Helper()
	d := NewDecoder()
	if c.before != nil {
		if _, err := d.Decode(c.before(v)); err != nil {
			t.Fatalf("%s v%d: decode before: %v", c.name, v, err)
		}
	}
	req, resp := c.build(v)
	req.SetVersion(v)
	evs, err := d.Decode(exchange(req, resp))
	if err != nil {
		t.Fatalf("%s v%d: Decode: %v", c.name, v, err)
	}
	return evs
}

func TestGolden(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range goldenCases() {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			var got []goldenVersion
			for v := int16(0); v <= maxVersion(c.key); v++ {
				evs := decodeCase(t, c, v)
				for i := range evs {
					if evs[i].APIKey != c.key || evs[i].APIVersion != v {
						t.Fatalf("v%d event %d: got %s v%d; want %s v%d", v, i,
							APIName(evs[i].APIKey), evs[i].APIVersion, APIName(c.key), v)
					}
				}
				got = append(got, goldenVersion{Version: v, Events: evs})
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			b = append(b, '\n')
			path := filepath.Join("testdata", "golden", c.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run go test -run TestGolden -update ./decode): %v", err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("decoded events differ from %s (rerun with -update if the change is intended):\n%s",
					path, firstDiff(string(b), string(want)))
			}
		})
	}
	if *update {
		if err := writeSeedCorpus(); err != nil {
			t.Fatalf("seed corpus: %v", err)
		}
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	gl, wl := bytes.Split([]byte(got), []byte("\n")), bytes.Split([]byte(want), []byte("\n"))
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(g, w) {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, g, w)
		}
	}
	return "(no line differs)"
}

// writeSeedCorpus writes the FuzzDecode seed corpus: the newest version of
// the cases marked seed, and a few frames of garbage.
func writeSeedCorpus() error {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, req, resp []byte) error {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\n", req, resp)
		return os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	for _, c := range goldenCases() {
		if !c.seed {
			continue
		}
		v := maxVersion(c.key)
		req, resp := c.build(v)
		req.SetVersion(v)
		x := exchange(req, resp)
		if err := write(c.name, x.Request, x.Response); err != nil {
			return err
		}
		// An old, non-flexible version too.
		req, resp = c.build(0)
		req.SetVersion(0)
		x = exchange(req, resp)
		if err := write(c.name+"_v0", x.Request, x.Response); err != nil {
			return err
		}
	}
	for name, g := range garbageSeeds() {
		if err := write(name, g[0], g[1]); err != nil {
			return err
		}
	}
	return nil
}

// garbageSeeds are frames that must fail cleanly.
func garbageSeeds() map[string][2][]byte {
	return map[string][2][]byte{
		"garbage_empty":        {{}, {}},
		"garbage_short_header": {{0, 11, 0}, nil},
		"garbage_huge_array":   {append([]byte{0, 11, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0, 1, 'g'}, 0x7f, 0xff, 0xff, 0xff), {0, 0, 0, 1}},
		"garbage_bytes":        {[]byte("\x00\x0e\x00\x03\x00\x00\x00\x07\x00\x02ab\x00\x01g\x00\x00\x00\x01\xff\xff\xff\xff\x00\x00"), []byte("\x00\x00\x00\x07\xde\xad\xbe\xef")},
	}
}
