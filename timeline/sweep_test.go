package timeline

import (
	"testing"
)

// TestSweepCacheChangesNothing runs each scenario twice: as the engine
// runs, where a sweep skips a group until its quietUntil unless a handler
// reported changing more than a member's last accepted request, and with
// every group's quietUntil cleared before each event, so that every sweep
// looks at every group. The entries must be the same: a handler that
// reports "only alive" when it changed more would make the first run miss
// or delay an inferred session timeout.
func TestSweepCacheChangesNothing(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			evs := sc.script().events()
			cached, _, _ := run(t, sc.cfg, evs, sc.closeAt)

			var entries []Entry
			cfg := sc.cfg
			cfg.OnEntry = func(e Entry) { entries = append(entries, e) }
			e := New(cfg)
			for _, ev := range evs {
				clear(e.quiet)
				e.Add(ev)
			}
			if sc.closeAt >= 0 {
				clear(e.quiet)
				e.Close(sec(sc.closeAt))
			}
			if got, want := entryLines(entries), entryLines(cached); got != want {
				t.Errorf("with every group swept:\n%s\nwith the sweep cache:\n%s", got, want)
			}
		})
	}
}
