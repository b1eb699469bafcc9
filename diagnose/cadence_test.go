package diagnose

import (
	"testing"
	"time"
)

// TestCadenceTolerance checks heartbeat_too_slow's rule: a median gap
// above a third of the session timeout plus cadenceTolerance, never a
// client configured by Kafka's rule whose gaps carry scheduling jitter.
func TestCadenceTolerance(t *testing.T) {
	cases := []struct {
		name    string
		session time.Duration
		every   float64 // seconds between heartbeats
		slow    bool
	}{
		// kafka-python's defaults (10 s, 3 s) as measured through kproxy.
		{"kafka-python defaults with jitter", 10 * time.Second, 3.33, false},
		{"exactly a third", 9 * time.Second, 3, false},
		{"a third plus a quarter", 12 * time.Second, 5, false},
		{"Java defaults", 45 * time.Second, 3, false},
		{"two per session", 10 * time.Second, 5, true},
		{"just past the tolerance", 12 * time.Second, 5.1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newScript("g")
			s.session = c.session
			s.round(0, 1, []mc{mA}, map[string][]int32{"A-1": {0}})
			s.hbs(cA, "A-1", 1, 1, 1+12*c.every, c.every)
			fs, _ := diagnoseScript(t, Config{}, s, 1+12*c.every)
			slow := 0
			for _, f := range fs {
				if f.Kind == HeartbeatTooSlow {
					slow++
				}
			}
			if (slow > 0) != c.slow {
				t.Errorf("heartbeat_too_slow findings: %d; want them %v", slow, c.slow)
			}
		})
	}
}
