package diagnose

import (
	"sync"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// Live runs a timeline engine and a diagnosis engine together for a live
// proxy: the observer goroutine adds exchanges, a ticker advances the
// clock when nothing arrives, and admin handlers ask for the report and
// the findings, so both engines sit behind one mutex. Each finding is
// handed to the onFinding callback once, when it is first seen: warnings
// as they are raised, the others after the exchange (or the tick) that
// revealed them. Callbacks run under the mutex.
type Live struct {
	mu        sync.Mutex
	tl        *timeline.Engine
	d         *Engine
	told      map[string]bool // IDs already handed to onFinding
	onFinding func(Finding)
	// dirty is set by the entries and findings that may reveal a finding
	// of the report; publish then looks.
	dirty bool
	seen  int // event findings seen by the last publish
	// afterStorm is told each storm's findings once it ended; stormsEnded
	// are the groups whose storm ended since the last publish.
	afterStorm  func(group string, fs []Finding)
	stormsEnded []string
}

// revealing are the entry kinds after which the report may hold a new
// finding: a generation formed, a departure, a storm, a suspect commit.
var revealing = map[timeline.Kind]bool{
	timeline.KindStable: true, timeline.KindSessionExpired: true, timeline.KindMemberDropped: true,
	timeline.KindStorm: true, timeline.KindSuspectCommit: true, timeline.KindGroupEmpty: true,
	timeline.KindMemberLeft: true, timeline.KindIncomplete: true,
}

// NewLive returns a Live with the timeline's tcfg (its OnEntry is still
// called with every entry) and the diagnosis' dcfg (its OnFinding is
// replaced by onFinding, which may be nil).
//
// afterStorm, when not nil, is called once a storm has ended (a
// storm_ended entry) with the group's findings from the storm's first
// rebalance to its end: the "findings" block a text timeline prints after
// the storm.
func NewLive(tcfg timeline.Config, dcfg Config, onFinding func(Finding), afterStorm func(group string, fs []Finding)) *Live {
	l := &Live{told: map[string]bool{}, onFinding: onFinding, afterStorm: afterStorm}
	dcfg.OnFinding = l.tell
	l.d = New(dcfg)
	next := tcfg.OnEntry
	tcfg.OnEntry = func(en timeline.Entry) {
		if next != nil {
			next(en)
		}
		l.d.Entry(en)
		if revealing[en.Kind] {
			l.dirty = true
		}
		if en.Kind == timeline.KindStormEnded && l.afterStorm != nil {
			l.stormsEnded = append(l.stormsEnded, en.Group)
		}
	}
	l.tl = timeline.New(tcfg)
	return l
}

// tell hands f to onFinding unless it was already.
func (l *Live) tell(f Finding) {
	if l.told[f.ID] {
		return
	}
	l.told[f.ID] = true
	if l.onFinding != nil {
		l.onFinding(f)
	}
}

// Observe adds one exchange and its events; it matches the proxy's
// observer interface.
func (l *Live) Observe(x *decode.Exchange, events []decode.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tl.Observe(x, events)
	l.d.Observe(x, events)
	l.publish()
}

// Advance moves the diagnosis clock to now (see Engine.Advance).
func (l *Live) Advance(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d.Advance(now)
}

// publish tells the findings not told yet, when something may have
// revealed one.
func (l *Live) publish() {
	if n := l.d.eventFindings(); n != l.seen {
		l.seen, l.dirty = n, true
	}
	if !l.dirty && len(l.stormsEnded) == 0 {
		return
	}
	l.dirty = false
	r := l.tl.Report()
	fs := l.d.Findings(r)
	for _, f := range fs {
		l.tell(f)
	}
	for _, group := range l.stormsEnded {
		l.afterStorm(group, stormFindings(r, fs, group))
	}
	l.stormsEnded = l.stormsEnded[:0]
}

// stormFindings is the findings of group from the first rebalance of its
// latest ended storm to the storm's end.
func stormFindings(r *timeline.Report, fs []Finding, group string) []Finding {
	var from, to time.Time
	for _, gr := range r.Groups {
		if gr.Group != group {
			continue
		}
		for _, st := range gr.Storms {
			if st.EndedAt != nil {
				from, to = parse(st.From), parse(*st.EndedAt)
			}
		}
	}
	out := []Finding{}
	for _, f := range fs {
		if f.Group == group && !from.IsZero() && !f.at.Before(from) && !f.at.After(to) {
			out = append(out, f)
		}
	}
	return out
}

// Report is the timeline's report as of now.
func (l *Live) Report() *timeline.Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tl.Report()
}

// Findings is every finding as of now.
func (l *Live) Findings() []Finding {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.d.Findings(l.tl.Report())
}

// Close settles the timeline as of at (see timeline.Engine.Close) and
// tells what that reveals.
func (l *Live) Close(at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tl.Close(at)
	l.d.Advance(at)
	l.dirty = true
	l.publish()
}
