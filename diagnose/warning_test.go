package diagnose

import (
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestLiveWarningBeforeEviction feeds the session-timeout stream with a
// ticker, as serve does, and checks that the warning is raised before the
// member's session runs out: a member silent since 18 s with a 10 s
// session is warned about at 24.67 s, once the clock passes it (the
// ticker's 25 s), not at the next exchange (27 s) nor at the eviction.
func TestLiveWarningBeforeEviction(t *testing.T) {
	var raisedAt time.Time
	var d *Engine
	d = New(Config{OnFinding: func(f Finding) {
		if f.Kind == SessionTimeoutWarning && raisedAt.IsZero() {
			raisedAt = d.now
		}
	}}, timeline.Config{})
	clock := 0.0
	for _, it := range sessionTimeout().ordered() {
		at := later(it.ev.At, it.ev.RespondedAt)
		for ; sec(clock).Before(at); clock += 0.5 {
			d.Advance(sec(clock))
		}
		evs := []decode.Event{*it.ev}
		d.AddEvents(evs)
		d.AddDecoded(&decode.Decoded{Events: evs})
	}
	if want := sec(25); !raisedAt.Equal(want) {
		t.Errorf("warning raised at %s; want %s (the first tick past 24.67 s, before the eviction at 28 s)", raisedAt, want)
	}
}
