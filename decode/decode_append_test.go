package decode

import (
	"encoding/json"
	"testing"
)

// TestDecodeAppend decodes every golden case at every version with one
// Decoder through DecodeAppend into one reused slice, after a sentinel
// event, and requires the sentinel untouched and the appended events equal
// to Decode's for the same case; an exchange that does not decode returns
// the slice unchanged with the error.
func TestDecodeAppend(t *testing.T) {
	render := func(evs []Event) string {
		b, err := json.Marshal(evs)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	sentinel := Event{Group: "sentinel", ConnID: 7}
	buf := make([]Event, 0, 1)
	for _, c := range goldenCases() {
		for v := range maxVersion(c.key) + 1 {
			t.Run(c.name, func(t *testing.T) {
				want := render(decodeCase(t, c, v))
				d := NewDecoder()
				if c.before != nil {
					if _, err := d.DecodeAppend(nil, c.before(v)); err != nil {
						t.Fatalf("v%d: decode before: %v", v, err)
					}
				}
				req, resp := c.build(v)
				req.SetVersion(v)
				evs, err := d.DecodeAppend(append(buf[:0], sentinel), exchange(req, resp))
				if err != nil {
					t.Fatalf("v%d: %v", v, err)
				}
				buf = evs
				if len(evs) == 0 || render(evs[:1]) != render([]Event{sentinel}) {
					t.Fatalf("v%d: the event before the appended ones changed: %+v", v, evs)
				}
				if got := render(evs[1:]); got != want && !(len(evs) == 1 && want == "null") {
					t.Fatalf("v%d: appended\n%s\nwant\n%s", v, got, want)
				}
			})
		}
	}
	t.Run("error", func(t *testing.T) {
		dst := []Event{sentinel}
		x := &Exchange{APIKey: 12, Request: []byte{0}}
		got, err := NewDecoder().DecodeAppend(dst, x)
		if err == nil {
			t.Fatal("a one-byte Heartbeat request decoded")
		}
		if len(got) != 1 || got[0].Group != "sentinel" {
			t.Fatalf("dst changed on error: %+v", got)
		}
	})
}
