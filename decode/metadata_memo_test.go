package decode

import (
	"encoding/json"
	"testing"
)

// TestMetadataMemo decodes the same Metadata exchange repeatedly with one
// Decoder, at every version: each time it gives what a fresh Decoder
// gives, and events do not share their topics.
func TestMetadataMemo(t *testing.T) {
	d := NewDecoder()
	for v := int16(0); v <= maxVersion(3); v++ {
		t.Run(string(rune('a'+v)), func(t *testing.T) {
			req, resp := metadata(v)
			req.SetVersion(v)
			x := exchange(req, resp)
			fresh, err := NewDecoder().Decode(x)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(fresh)
			var first []Event
			for i := range 3 {
				evs, err := d.Decode(x)
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := json.Marshal(evs); string(got) != string(want) {
					t.Fatalf("decode %d gives\n%s\nwant\n%s", i, got, want)
				}
				if i == 0 {
					first = evs
				}
			}
			if len(first[0].Metadata.Topics) == 0 {
				t.Fatal("the case has no topics")
			}
			first[0].Metadata.Topics[0].Name = "changed"
			evs, _ := d.Decode(x)
			if got, _ := json.Marshal(evs); string(got) != string(want) {
				t.Fatalf("after changing an earlier event, decode gives\n%s\nwant\n%s", got, want)
			}
		})
	}
}
