package decode

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRequestIsFlexibleMatchesKmsg checks the precomputed table against
// kmsg for every key and version, below and above what kmsg knows.
func TestRequestIsFlexibleMatchesKmsg(t *testing.T) {
	for key := int16(-1); key < 300; key++ {
		r := kmsg.RequestForKey(key)
		for ver := int16(-2); ver < 40; ver++ {
			want := false
			if r != nil {
				r.SetVersion(ver)
				want = r.IsFlexible()
			}
			if got := RequestIsFlexible(key, ver); got != want {
				t.Errorf("RequestIsFlexible(%d, %d) = %v; kmsg says %v", key, ver, got, want)
			}
		}
	}
}
