package decode

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// TestMetadataMemo decodes the same Metadata exchange repeatedly with one
// Decoder, at every version: each time it gives what a fresh Decoder
// gives, and changing the first event's topics (its own copy: the memo
// keeps another, which later events share) changes no later event.
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

// TestMetadataMemoNear decodes, after a good Metadata exchange, ones with
// the same response body whose request is cut short (an error) or has a
// byte more (which kmsg ignores), and one whose response header names
// another correlation id (an error): each gives what a fresh Decoder gives.
func TestMetadataMemoNear(t *testing.T) {
	for v := int16(0); v <= maxVersion(3); v++ {
		req, resp := metadata(v)
		req.SetVersion(v)
		good := exchange(req, resp)
		cut := *good
		cut.Request = good.Request[:len(good.Request)-1]
		long := *good
		long.Request = append(slices.Clip(good.Request), 0)
		corr := *good
		corr.Response = slices.Clone(good.Response)
		corr.Response[3]++
		for _, c := range []struct {
			name string
			x    *Exchange
		}{{"cut", &cut}, {"long", &long}, {"corr", &corr}} {
			evs, err := NewDecoder().Decode(c.x)
			want, _ := json.Marshal(evs)
			wantErr := fmt.Sprint(err)
			d := NewDecoder()
			if _, err := d.Decode(good); err != nil {
				t.Fatal(err)
			}
			evs, err = d.Decode(c.x)
			if got, _ := json.Marshal(evs); string(got) != string(want) || fmt.Sprint(err) != wantErr {
				t.Errorf("v%d %s: got %s, error %v; want %s, error %s", v, c.name, got, err, want, wantErr)
			}
		}
	}
}

// TestMetadataMemoManyRequests decodes, again and again, exchanges whose
// request bodies differ (by trailing bytes kmsg ignores) and whose
// response bodies are the same, more of them than the memo remembers per
// response: each gives what a fresh Decoder gives.
func TestMetadataMemoManyRequests(t *testing.T) {
	v := maxVersion(3)
	req, resp := metadata(v)
	req.SetVersion(v)
	good := exchange(req, resp)
	d := NewDecoder()
	for round := range 3 {
		for i := range memoMaxRequests + 2 {
			x := *good
			x.Request = append(slices.Clip(good.Request), make([]byte, i)...)
			evs, err := NewDecoder().Decode(&x)
			want, _ := json.Marshal(evs)
			wantErr := fmt.Sprint(err)
			evs, err = d.Decode(&x)
			if got, _ := json.Marshal(evs); string(got) != string(want) || fmt.Sprint(err) != wantErr {
				t.Fatalf("round %d, %d bytes more: got %s, error %v; want %s, error %s", round, i, got, err, want, wantErr)
			}
		}
	}
}
