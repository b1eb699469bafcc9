package decode

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestDecodeReusedInterleaved decodes the golden cases of the APIs whose
// structs a Decoder reuses, at every version, interleaved in several
// orders on one Decoder: every call must give the events of a Decoder of
// its own, whatever the reused structs held before.
func TestDecodeReusedInterleaved(t *testing.T) {
	type job struct {
		x    *Exchange
		want string
	}
	var jobs []job
	for _, c := range goldenCases() {
		if !slices.Contains(reusedKeys, c.key) || c.before != nil {
			continue
		}
		for v := int16(0); v <= maxVersion(c.key); v++ {
			want, err := json.Marshal(decodeCase(t, c, v))
			if err != nil {
				t.Fatal(err)
			}
			req, resp := c.build(v)
			req.SetVersion(v)
			jobs = append(jobs, job{exchange(req, resp), string(want)})
		}
	}
	d := NewDecoder()
	for g := range 4 {
		for i := range 50 * len(jobs) {
			j := jobs[(i*(g+1))%len(jobs)]
			evs, err := d.Decode(j.x)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(evs); string(got) != j.want {
				t.Fatalf("got %s\nwant %s", got, j.want)
			}
		}
	}
}
