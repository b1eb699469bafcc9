package decode

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkGenerationAnswer checks that ReadGenerationAnswer says of x what a
// Decoder did (evs and err from decoding x): the group, generation and
// error code of its JoinGroup or SyncGroup event when it had a response,
// and nothing otherwise.
func checkGenerationAnswer(t testing.TB, x *Exchange, evs []Event, err error) {
	t.Helper()
	var want GenerationAnswer
	wantOK := false
	if err == nil && x.Response != nil && !x.Oversized && len(evs) == 1 {
		switch e := &evs[0]; {
		case e.JoinGroup != nil:
			want, wantOK = GenerationAnswer{Group: e.Group, Generation: e.JoinGroup.Generation, ErrorCode: e.JoinGroup.ErrorCode}, true
		case e.SyncGroup != nil:
			want, wantOK = GenerationAnswer{Group: e.Group, Generation: e.SyncGroup.Generation, ErrorCode: e.SyncGroup.ErrorCode}, true
		}
	}
	got, ok := ReadGenerationAnswer(x)
	if got != want || ok != wantOK {
		t.Errorf("ReadGenerationAnswer = %+v, %v; want %+v, %v (the Decoder's)", got, ok, want, wantOK)
	}
}

// TestReadGenerationAnswerAgreesWithDecoder: every JoinGroup and SyncGroup
// golden case, at every version, reads as the Decoder decodes it.
func TestReadGenerationAnswerAgreesWithDecoder(t *testing.T) {
	n := 0
	for _, c := range goldenCases() {
		if c.key != int16(kmsg.JoinGroup) && c.key != int16(kmsg.SyncGroup) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			for v := int16(0); v <= maxVersion(c.key); v++ {
				req, resp := c.build(v)
				req.SetVersion(v)
				x := exchange(req, resp)
				evs := decodeCase(t, c, v)
				checkGenerationAnswer(t, x, evs, nil)
				if _, ok := ReadGenerationAnswer(x); ok {
					n++
				}
			}
		})
	}
	if n == 0 {
		t.Error("no case read; want the JoinGroup and SyncGroup cases with a response")
	}
}

func TestReadGenerationAnswerRefuses(t *testing.T) {
	join := func() *Exchange {
		req, resp := joinGroupLeaderRange(9)
		return exchange(at(req, 9), resp)
	}
	tests := []struct {
		name string
		x    func() *Exchange
	}{
		{"nil", func() *Exchange { return nil }},
		{"heartbeat", func() *Exchange {
			req, resp := heartbeat(4)
			return exchange(at(req, 4), resp)
		}},
		{"no_response", func() *Exchange {
			req, _ := joinGroupLeaderRange(9)
			return exchange(at(req, 9), nil)
		}},
		{"oversized", func() *Exchange {
			x := join()
			x.Request, x.Oversized = nil, true
			return x
		}},
		{"api_version_mismatch", func() *Exchange {
			x := join()
			x.APIVersion = 8
			return x
		}},
		{"correlation_id_mismatch", func() *Exchange {
			x := join()
			binary.BigEndian.PutUint32(x.Response, 99)
			return x
		}},
		{"version_above_kmsg", func() *Exchange {
			v := maxVersion(11) + 1
			req, resp := joinGroupLeaderRange(v)
			return exchange(at(req, v), resp)
		}},
		{"truncated_response", func() *Exchange {
			x := join()
			x.Response = x.Response[:len(x.Response)/2]
			return x
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := ReadGenerationAnswer(tt.x()); ok {
				t.Errorf("got %+v, true; want false", got)
			}
		})
	}
}
