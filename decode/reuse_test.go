package decode

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
)

// TestDecodeConcurrentReused decodes the golden cases of the APIs whose
// structs a Decoder reuses, at every version, from four goroutines on one
// Decoder: a call that finds the reused structs taken decodes into fresh
// ones, and every call must give the events of a Decoder of its own.
func TestDecodeConcurrentReused(t *testing.T) {
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
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 * len(jobs) {
				j := jobs[(i*(g+1))%len(jobs)]
				evs, err := d.Decode(j.x)
				if err != nil {
					t.Error(err)
					return
				}
				if got, _ := json.Marshal(evs); string(got) != j.want {
					t.Errorf("got %s\nwant %s", got, j.want)
					return
				}
			}
		})
	}
	wg.Wait()
}
