package decode

import (
	"encoding/json"
	"testing"
)

// TestEventsNeverAliasFrames decodes every golden case at every version,
// newest first then oldest first, with a Decoder that first decoded every
// case of the same API at every version (its reused kmsg structs go from
// version to version and case to case), overwrites the frames, decodes
// other frames, and checks that the events
// still read as those of a Decoder that decoded only this case: no event
// aliases the exchange's bytes or a reused struct, and no field survives
// from an earlier frame.
func TestEventsNeverAliasFrames(t *testing.T) {
	render := func(evs []Event) string {
		b, err := json.Marshal(evs)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for pass := range 2 {
		for _, c := range goldenCases() {
			max := maxVersion(c.key)
			for i := int16(0); i <= max; i++ {
				v := max - i
				if pass == 1 {
					v = i
				}
				want := render(decodeCase(t, c, v))
				d := NewDecoder()
				for _, o := range goldenCases() {
					for w := int16(0); o.key == c.key && w <= maxVersion(o.key); w++ {
						if o.name != c.name || w != v {
							oreq, oresp := o.build(w)
							oreq.SetVersion(w)
							d.Decode(exchange(oreq, oresp))
						}
					}
				}
				if c.before != nil {
					if _, err := d.Decode(c.before(v)); err != nil {
						t.Fatalf("%s v%d: decode before: %v", c.name, v, err)
					}
				}
				req, resp := c.build(v)
				req.SetVersion(v)
				x := exchange(req, resp)
				evs, err := d.Decode(x)
				if err != nil {
					t.Fatalf("%s v%d: %v", c.name, v, err)
				}
				for i := range x.Request {
					x.Request[i] = 0xff
				}
				for i := range x.Response {
					x.Response[i] = 0xff
				}
				// Decoding other frames reuses the structs.
				for _, o := range goldenCases() {
					if o.key == c.key && o.name != c.name && v <= maxVersion(o.key) {
						oreq, oresp := o.build(v)
						oreq.SetVersion(v)
						d.Decode(exchange(oreq, oresp))
					}
				}
				if got := render(evs); got != want {
					t.Fatalf("%s v%d: after overwriting the frames the events read\n%s\nwant\n%s", c.name, v, got, want)
				}
			}
		}
	}
}
