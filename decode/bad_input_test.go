package decode

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// decodedKeys are the APIs the Decoder turns into events.
var decodedKeys = []int16{3, 8, 9, 10, 11, 12, 13, 14, 68, 76, 78, 79, 88, 89}

// TestTruncated cuts every golden frame at every length: each cut must fail
// with an ordinary error, never a panic and never a partial event.
func TestTruncated(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []int16{0, maxVersion(c.key)} {
				req, resp := c.build(v)
				req.SetVersion(v)
				full := exchange(req, resp)
				for n := 0; n < len(full.Request); n++ {
					x := *full
					x.Request = full.Request[:n]
					x.Response = nil
					evs, err := NewDecoder().Decode(&x)
					if err == nil || errors.Is(err, ErrPanic) || evs != nil {
						t.Fatalf("v%d request cut at %d of %d: got %d events, %v; want an error", v, n, len(full.Request), len(evs), err)
					}
				}
				for n := 0; n < len(full.Response); n++ {
					x := *full
					x.Response = full.Response[:n]
					evs, err := NewDecoder().Decode(&x)
					if err == nil || errors.Is(err, ErrPanic) || evs != nil {
						t.Fatalf("v%d response cut at %d of %d: got %d events, %v; want an error", v, n, len(full.Response), len(evs), err)
					}
				}
			}
		})
	}
}

// TestGarbage puts random bytes behind valid headers, at every version and
// one above: decoding may fail, never panic.
func TestGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, key := range decodedKeys {
		t.Run(APIName(key), func(t *testing.T) {
			for v := int16(0); v <= maxVersion(key)+1; v++ {
				for range 40 {
					req := kmsg.RequestForKey(key)
					req.SetVersion(v)
					head := requestFrame(req, 7)[:8] // key, version, correlation id
					body := make([]byte, rng.IntN(64))
					for i := range body {
						body[i] = byte(rng.UintN(256))
					}
					if rng.IntN(2) == 0 {
						body = append([]byte{0, 1, 'c', 0}, body...) // a client id, a tag section
					}
					x := &Exchange{APIKey: key, APIVersion: v, Request: append(head, body...)}
					if rng.IntN(2) == 0 {
						x.Response = binary.BigEndian.AppendUint32(nil, 7)
						for range rng.IntN(64) {
							x.Response = append(x.Response, byte(rng.UintN(256)))
						}
					}
					if _, err := NewDecoder().Decode(x); errors.Is(err, ErrPanic) {
						t.Fatalf("v%d: %v", v, err)
					}
				}
			}
		})
	}
}

func TestBadExchange(t *testing.T) {
	hb := func(v int16) *Exchange {
		req, resp := heartbeat(v)
		return exchange(at(req, v), resp)
	}
	tests := []struct {
		name string
		x    func() *Exchange
		want error
	}{
		{"version_above_kmsg", func() *Exchange {
			x := hb(maxVersion(12) + 1)
			return x
		}, ErrUnsupportedVersion},
		{"negative_version", func() *Exchange { return hb(-1) }, ErrUnsupportedVersion},
		{"join_group_version_above_kmsg", func() *Exchange {
			v := maxVersion(11) + 1
			req, resp := joinGroupLeaderRange(v)
			return exchange(at(req, v), resp)
		}, ErrUnsupportedVersion},
		{"correlation_id_mismatch", func() *Exchange {
			x := hb(4)
			binary.BigEndian.PutUint32(x.Response, 99)
			return x
		}, ErrMismatch},
		{"api_key_mismatch", func() *Exchange {
			x := hb(4)
			x.APIKey = 11
			return x
		}, ErrMismatch},
		{"api_version_mismatch", func() *Exchange {
			x := hb(4)
			x.APIVersion = 3
			return x
		}, ErrMismatch},
		{"empty_request", func() *Exchange { return &Exchange{APIKey: 11} }, ErrShortFrame},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := NewDecoder().Decode(tt.x())
			if !errIs(err, tt.want) || evs != nil {
				t.Errorf("got %d events, %v; want %v", len(evs), err, tt.want)
			}
		})
	}
	if _, err := NewDecoder().Decode(nil); err == nil {
		t.Error("Decode(nil): got no error")
	}
}

// TestNotDecoded: APIs other than the group APIs and Metadata give nothing,
// and no error, whatever their bytes.
func TestNotDecoded(t *testing.T) {
	tests := []struct {
		name string
		x    *Exchange
	}{
		{"api_versions", exchange(at(kmsg.NewPtrApiVersionsRequest(), 4), kmsg.NewPtrApiVersionsResponse())},
		{"produce", exchange(at(kmsg.NewPtrProduceRequest(), 9), kmsg.NewPtrProduceResponse())},
		{"sasl_handshake", exchange(at(kmsg.NewPtrSASLHandshakeRequest(), 1), kmsg.NewPtrSASLHandshakeResponse())},
		{"sasl_authenticate", exchange(at(&kmsg.SASLAuthenticateRequest{SASLAuthBytes: []byte("\x00user\x00secret")}, 2), nil)},
		{"unknown_key", &Exchange{APIKey: 999, Request: []byte{0x03, 0xe7, 0, 0, 0, 0, 0, 1}}},
		{"produce_garbage", &Exchange{APIKey: 0, Request: []byte{0, 0, 0xff}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := NewDecoder().Decode(tt.x)
			if evs != nil || err != nil {
				t.Errorf("got %d events, %v; want nil, nil", len(evs), err)
			}
		})
	}
}
