package gcpercent

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestSetServe checks that SetServe sets Serve when GOGC is unset and
// leaves the runtime's target, which GOGC set, alone otherwise.
func TestSetServe(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	for _, c := range []struct {
		gogc string // "" unset
		want int
	}{
		{"", Serve},
		{"200", 100}, // the runtime read GOGC at start; here it is what the test set
	} {
		debug.SetGCPercent(100)
		if c.gogc == "" {
			t.Setenv("GOGC", "")
			os.Unsetenv("GOGC")
		} else {
			t.Setenv("GOGC", c.gogc)
		}
		SetServe()
		if got := debug.SetGCPercent(100); got != c.want {
			t.Errorf("GOGC=%q: the collector's target is %d, want %d", c.gogc, got, c.want)
		}
	}
}
