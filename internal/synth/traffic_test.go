package synth

import (
	"bytes"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestTraffic checks, per mix, that every exchange decodes, that the
// exchanges come in completion order, that the same seed gives the same
// traffic, and that the mix is what its documentation says.
func TestTraffic(t *testing.T) {
	for _, c := range []struct {
		mix Mix
		n   int
		// share bounds, in percent of exchanges
		heartbeatMin, fetchPathMin, rebalanceMax float64
	}{
		{mix: Realistic, n: 60000, heartbeatMin: 45, fetchPathMin: 8, rebalanceMax: 6},
		{mix: RebalanceHeavy, n: 20000, heartbeatMin: 30, fetchPathMin: 0, rebalanceMax: 30},
	} {
		t.Run(c.mix.String(), func(t *testing.T) {
			opts := Options{Seed: 7, Groups: 40, Mix: c.mix}
			a, b := New(opts), New(opts)
			dec := decode.NewDecoder()
			counts := map[int16]int{}
			var last *decode.Exchange
			for i := range c.n {
				x, y := a.Next(), b.Next()
				if x.ConnID != y.ConnID || !x.RequestAt.Equal(y.RequestAt) || !bytes.Equal(x.Request, y.Request) || !bytes.Equal(x.Response, y.Response) {
					t.Fatalf("exchange %d differs between two runs with the same seed", i)
				}
				if _, err := dec.Decode(x); err != nil {
					t.Fatalf("exchange %d (%s v%d) does not decode: %v", i, decode.APIName(x.APIKey), x.APIVersion, err)
				}
				if last != nil && completed(x).Before(completed(last)) {
					t.Fatalf("exchange %d completed at %s, before the previous one (%s)", i, completed(x), completed(last))
				}
				last = x
				counts[x.APIKey]++
			}
			share := func(keys ...int16) float64 {
				n := 0
				for _, k := range keys {
					n += counts[k]
				}
				return 100 * float64(n) / float64(c.n)
			}
			if hb := share(12); hb < c.heartbeatMin {
				t.Errorf("heartbeats are %.1f%% of exchanges, want at least %.0f%%", hb, c.heartbeatMin)
			}
			if fp := share(3, 18); fp < c.fetchPathMin {
				t.Errorf("ApiVersions and Metadata are %.1f%%, want at least %.0f%%", fp, c.fetchPathMin)
			}
			if rb := share(11, 13, 14); rb > c.rebalanceMax || rb == 0 {
				t.Errorf("JoinGroup, SyncGroup and LeaveGroup are %.1f%%, want some and at most %.0f%%", rb, c.rebalanceMax)
			}
		})
	}
}

func TestParseMix(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    Mix
		wantErr bool
	}{{"realistic", Realistic, false}, {"rebalance-heavy", RebalanceHeavy, false}, {"heavy", 0, true}} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseMix(c.in)
			if (err != nil) != c.wantErr || got != c.want {
				t.Errorf("ParseMix(%q) = %v, %v", c.in, got, err)
			}
		})
	}
}
