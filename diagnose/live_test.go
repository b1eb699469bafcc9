package diagnose

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/pipeline"
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
			l := NewLive(timeline.Config{}, timeline.Retention{}, Config{}, func(f Finding) { told = append(told, f.ID) }, nil)
			feedLive(l, c.script())
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

// TestLiveAfterStorm: the rolling restart's storm (six rebalances within
// a 30 s window) is over when the input ends 30 s past its last
// rebalance (the timeline ends a storm at the next rebalance after its
// window, or at the end); Live then hands the group's findings of the
// storm to afterStorm, once: the rebalance loop and the rollout.
func TestLiveAfterStorm(t *testing.T) {
	var calls [][]Kind
	l := NewLive(timeline.Config{StormWindow: 30 * time.Second}, timeline.Retention{}, Config{}, nil, func(group string, fs []Finding) {
		var ks []Kind
		for _, f := range fs {
			if f.Group != group {
				t.Errorf("finding of group %s in the block of %s", f.Group, group)
			}
			ks = append(ks, f.Kind)
		}
		calls = append(calls, ks)
	})
	feedLive(l, rollingRestart())
	if len(calls) != 0 {
		t.Fatalf("afterStorm called %v before the storm ended", calls)
	}
	l.Close(sec(120))
	if want := [][]Kind{{RebalanceLoop, RollingRestart}}; !reflect.DeepEqual(calls, want) {
		t.Errorf("afterStorm got %v; want %v", calls, want)
	}
}

// feedLive hands s to l as serve's pipeline does: the timeline takes each
// item's events, then the diagnosis the item.
func feedLive(l *Live, s *script) {
	for _, it := range s.ordered() {
		var evs []decode.Event
		if it.ev != nil {
			evs = []decode.Event{*it.ev}
			l.Timeline().AddEvents(evs)
		}
		l.AddDecoded(pipeline.NewDecoded(it.x, evs))
	}
}
