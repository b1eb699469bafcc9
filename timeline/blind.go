package timeline

import (
	"fmt"
	"time"
)

// Blind tells the engine that exchanges of group are missing from at on:
// instance, one of several proxies whose exchanges are merged (a fleet,
// package fleet), went silent, killed or cut off. The group's report
// notes it, and while the group is blind no session timeout is inferred:
// a member whose heartbeats went through that instance may well be alive,
// and saying its session expired would invent an event. The next
// generation that becomes stable ends it, the coordinator's answers then
// telling who is in. A group the engine does not know, or a dormant one
// (dormant.go: it had ended), is left alone.
func (e *Engine) Blind(group, instance string, at time.Time) {
	g := e.byID[group]
	if g == nil || g.dormant != nil {
		return // a dormant group had ended: nothing of it can be missing
	}
	e.advance(at)
	g.note("silent instance "+instance, fmt.Sprintf(
		"kproxy instance %s went silent after %s (killed, or cut off from the events topic): what it observed of this group since is missing, and no session timeout is inferred until the next generation is stable",
		instance, stamp(at)))
	g.blind = true
}

// Blind is Engine.Blind on the live engine.
func (l *Live) Blind(group, instance string, at time.Time) {
	l.e.Blind(group, instance, at)
	l.touched[group] = true
}
