package diagnose

import (
	"slices"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestLiveTellsEachFindingOnce runs scenarios through Live as serve does
// and checks that every finding is told exactly once, that what was told
// is what Findings returns at the end, and that warnings come before the
// evictions they link.
func TestLiveTellsEachFindingOnce(t *testing.T) {
	for _, c := range []struct {
		name    string
		script  func() *script
		closeAt float64
	}{
		{"session_timeout", sessionTimeout, 50},
		{"poll_timeout_deadline", pollDeadline, 70},
		{"rolling_restart", rollingRestart, 80},
		{"commits", commits, 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			var told []string
			l := NewLive(timeline.Config{}, Config{}, func(f Finding) { told = append(told, f.ID) })
			for _, it := range c.script().ordered() {
				if it.x != nil {
					l.Observe(it.x, nil)
					continue
				}
				l.Observe(nil, []decode.Event{*it.ev})
			}
			l.Close(sec(c.closeAt))
			var ids []string
			for _, f := range l.Findings() {
				ids = append(ids, f.ID)
				for _, link := range f.Links {
					if i, j := slices.Index(told, link), slices.Index(told, f.ID); i < 0 || i > j {
						t.Errorf("%s was told before the warning %s it links", f.ID, link)
					}
				}
			}
			sortedTold := slices.Sorted(slices.Values(told))
			if !slices.Equal(slices.Compact(slices.Clone(sortedTold)), sortedTold) {
				t.Errorf("a finding was told twice: %v", told)
			}
			if !slices.Equal(sortedTold, slices.Sorted(slices.Values(ids))) {
				t.Errorf("told %v; findings %v", told, ids)
			}
		})
	}
}
