package journal

import (
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestOversizedRoundTrips checks that the Oversized mark (flag bit 2) and
// the absence of the frame it stands for survive a record.
func TestOversizedRoundTrips(t *testing.T) {
	tests := []struct {
		name string
		x    decode.Exchange
	}{
		{"request_too_large", decode.Exchange{APIKey: 11, Oversized: true, ResponseAt: time.Unix(2, 0)}},
		{"response_too_large", decode.Exchange{APIKey: 8, Request: []byte{0, 8, 0, 2}, Oversized: true}},
		{"not_oversized", decode.Exchange{APIKey: 12, Request: []byte{0, 12}, Response: []byte{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := appendExchange(nil, &tt.x)
			got, err := parseExchange(b)
			if err != nil {
				t.Fatalf("parseExchange: %v", err)
			}
			if got.Oversized != tt.x.Oversized || (got.Request == nil) != (tt.x.Request == nil) ||
				(got.Response == nil) != (tt.x.Response == nil) {
				t.Fatalf("got oversized %v request nil %v response nil %v; want %v %v %v", got.Oversized,
					got.Request == nil, got.Response == nil, tt.x.Oversized, tt.x.Request == nil, tt.x.Response == nil)
			}
		})
	}
}
