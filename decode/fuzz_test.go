package decode

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary request and response frames to the Decoder.
// It must never panic (a recovered panic is ErrPanic, and fails here), and
// decoding the same bytes twice must give the same events, and
// ReadGenerationAnswer must read what the Decoder decodes. The committed
// seed corpus (testdata/fuzz/FuzzDecode, rewritten by TestGolden -update)
// holds valid frames of every API and some garbage.
func FuzzDecode(f *testing.F) {
	for _, g := range garbageSeeds() {
		f.Add(g[0], g[1])
	}
	f.Fuzz(func(t *testing.T, req, resp []byte) {
		x := &Exchange{Request: req, RequestAt: testAt}
		if len(req) >= 4 {
			x.APIKey = int16(binary.BigEndian.Uint16(req))
			x.APIVersion = int16(binary.BigEndian.Uint16(req[2:]))
		}
		if len(resp) > 0 {
			x.Response, x.ResponseAt = resp, testRespAt
		}
		evs, err := NewDecoder().Decode(x)
		if errors.Is(err, ErrPanic) {
			t.Fatal(err)
		}
		if err != nil && evs != nil {
			t.Fatalf("got %d events with error %v; want none", len(evs), err)
		}
		checkGenerationAnswer(t, x, evs, err)
		again, err2 := NewDecoder().Decode(x)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("second decode: got error %v; first %v", err2, err)
		}
		a, errA := json.Marshal(evs)
		b, errB := json.Marshal(again)
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("decoding twice differs (%v, %v):\n%s\n%s", errA, errB, a, b)
		}
	})
}

// TestOversizedDecodesToUnobserved: an exchange the proxy marked Oversized
// (a frame too large to keep) decodes to one event saying only that it
// happened.
func TestOversizedDecodesToUnobserved(t *testing.T) {
	x := &Exchange{ConnID: 3, APIKey: 11, APIVersion: 5, RequestAt: testAt, Oversized: true}
	evs, err := NewDecoder().Decode(x)
	if err != nil || len(evs) != 1 || evs[0].Unobserved == nil || evs[0].APIKey != 11 || evs[0].ConnID != 3 || evs[0].Group != "" {
		t.Fatalf("Decode = %+v, %v; want one Unobserved JoinGroup event of connection 3", evs, err)
	}
}
