package diagnose

import (
	"hash/maphash"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// Live is the diagnosis of a live proxy, beside the live timeline it
// creates (Timeline). One goroutine owns both, the pipeline's: it hands
// the Live each exchange's events (AddEvents), which moves the diagnosis'
// clock and hands them to the timeline, the timeline hands its entries to
// Entry, and the pipeline then hands each exchange to AddDecoded; the
// source's ticks
// advance the clock when nothing arrives (Advance). Readers on any
// goroutine (the admin server) take the findings as last published
// (Findings, FindingsPage, GroupFindings, Counts) without waiting for
// anything. Every other method is the owner's; nothing is locked.
//
// Each finding is handed to onFinding once, when it is first seen:
// warnings as they are raised, the others within publishEvery of the
// exchange (or the tick) that revealed them.
type Live struct {
	tl *timeline.Live

	d         *Engine
	onFinding func(Finding)
	// told is the findings already handed to onFinding: those older than
	// the engine's Forget are forgotten (and no longer told), so that it
	// does not grow with the proxy's uptime.
	told     toldSet
	toldPrun time.Time
	// dirty are the groups in which something may have revealed a new
	// finding since the last publish: an entry that may reveal one in the
	// report, or an event the engine says changed the group's findings
	// (Engine.takeChanged). publish recomputes these groups' findings only,
	// and published is the event time it last did.
	dirty     map[string]bool
	published time.Time
	// afterStorm is told each storm's findings once it ended; stormsEnded
	// are the groups whose storm ended since the last publish.
	afterStorm  func(group string, fs []Finding)
	stormsEnded []string
	// counts is, by group, its findings at a glance as of the publish
	// that last recomputed it; a group with none has no entry.
	// countsPruned is the engine's last prune publish has seen, and
	// countsSnap the timeline snapshot it last checked counts against.
	counts       map[string]counted
	countsPruned time.Time
	countsSnap   *timeline.Snapshot
	// found is what readers read: each group's findings and counts as of
	// the publish that last recomputed it.
	found atomic.Pointer[foundSet]
}

// foundSet is the findings published for readers, by group, in
// foundParts parts by a hash of the group id (partOf). Neither it nor its
// parts are modified once published: a publish makes a new set that
// shares the parts holding none of the groups it recomputed, so that it
// copies those groups' parts, not every group's.
type foundSet [foundParts]*foundPart

// foundParts is how many parts a foundSet has.
const foundParts = 64

// foundPart is the findings published for the groups of one part.
type foundPart struct {
	findings map[string][]Finding // sorted; a group with none has no entry
	counts   map[string]FindingCount
}

// partSeed hashes group ids to their parts.
var partSeed = maphash.MakeSeed()

// partOf is the part of a foundSet that holds group.
func partOf(group string) int { return int(maphash.String(partSeed, group) % foundParts) }

// emptyFound is a foundSet with no group.
func emptyFound() *foundSet {
	found := new(foundSet)
	for i := range found {
		found[i] = &foundPart{findings: map[string][]Finding{}, counts: map[string]FindingCount{}}
	}
	return found
}

// without is a copy of p without the groups in only.
func (p *foundPart) without(only map[string]bool) *foundPart {
	q := &foundPart{findings: make(map[string][]Finding, len(p.findings)), counts: make(map[string]FindingCount, len(p.counts))}
	for id, fs := range p.findings {
		if !only[id] {
			q.findings[id] = fs
		}
	}
	for id, c := range p.counts {
		if !only[id] {
			q.counts[id] = c
		}
	}
	return q
}

// FindingCount is one group's findings at a glance: how many, and the
// most urgent severity among them ("" when there is none).
type FindingCount struct {
	N     int
	Worst Severity
}

// counted is a group's FindingCount, with next: the time of its oldest
// finding that was not yet older than Config.Forget when it was counted
// (the engine's prune drops warnings and event findings older than that);
// zero when there is none, or no Forget.
type counted struct {
	FindingCount
	next time.Time
}

// severityRank orders severities, the most urgent highest.
var severityRank = map[Severity]int{Info: 1, Warning: 2, Critical: 3}

// CountFindings is fs at a glance, by group; groups without a finding
// have no entry.
func CountFindings(fs []Finding) map[string]FindingCount {
	out := map[string]FindingCount{}
	for _, f := range fs {
		c := out[f.Group]
		c.N++
		if severityRank[f.Severity] > severityRank[c.Worst] {
			c.Worst = f.Severity
		}
		out[f.Group] = c
	}
	return out
}

// publishEvery is how long, in event time, the findings of the groups
// something changed in may wait to be recomputed: a busy proxy recomputes
// them once per publishEvery, all together, however many exchanges of a
// rebalance touched them (every partition that moves settles a handover
// when its new owner fetches it), and a quiet one at once. The end of a
// storm is published at once (its findings block follows its entry).
const publishEvery = time.Second

// revealing are the entry kinds after which the report may hold a new
// finding: a generation formed, a departure, a storm, a suspect commit;
// in a streams group, a fencing, a member's tasks changed (a task held
// again after a gap, a warm-up ended), tasks left unassigned.
var revealing = map[timeline.Kind]bool{
	timeline.KindStable: true, timeline.KindSessionExpired: true, timeline.KindMemberDropped: true,
	timeline.KindStorm: true, timeline.KindSuspectCommit: true, timeline.KindGroupEmpty: true,
	timeline.KindMemberLeft: true, timeline.KindIncomplete: true,
	timeline.KindFenced: true, timeline.KindTasks: true, timeline.KindTasksUnassigned: true,
}

// NewLive returns a Live with a live timeline of tcfg keeping what retain
// says (its OnEntry is still called with every entry), and the
// diagnosis' dcfg (its OnFinding is replaced by onFinding, which may be
// nil).
//
// afterStorm, when not nil, is called once a storm has ended (a
// storm_ended entry) with the group's findings from the storm's first
// rebalance to its end: the "findings" block a text timeline prints after
// the storm.
func NewLive(tcfg timeline.Config, retain timeline.Retention, dcfg Config, onFinding func(Finding), afterStorm func(group string, fs []Finding)) *Live {
	l := &Live{told: toldSet{}, onFinding: onFinding, afterStorm: afterStorm,
		dirty: map[string]bool{}, counts: map[string]counted{}}
	l.found.Store(emptyFound())
	dcfg.OnFinding = func(f Finding) { // a warning
		if !l.forgotten(f.at) {
			l.dirty[f.Group] = true // counted at the next publish
		}
		l.tell(f)
	}
	l.d = newEngine(dcfg)
	next := tcfg.OnEntry
	tcfg.OnEntry = func(en timeline.Entry) {
		if next != nil {
			next(en)
		}
		l.entry(en)
	}
	l.tl = timeline.NewLive(tcfg, retain)
	l.d.tl = l.tl
	return l
}

// Timeline is the live timeline the diagnosis reads and feeds: what the
// admin API's timeline shows.
func (l *Live) Timeline() *timeline.Live { return l.tl }

// AddEvents takes one exchange's events, and hands them to the timeline
// (see Engine.AddEvents): the pipeline's consumer of events is the Live,
// not its timeline.
func (l *Live) AddEvents(events []decode.Event) { l.d.AddEvents(events) }

// entry takes one of the timeline's entries.
func (l *Live) entry(en timeline.Entry) {
	l.d.Entry(en)
	if revealing[en.Kind] {
		l.dirty[en.Group] = true
	}
	if en.Kind == timeline.KindStormEnded && l.afterStorm != nil {
		l.stormsEnded = append(l.stormsEnded, en.Group)
	}
}

// tell hands f to onFinding unless it was already, or it is older than
// what told remembers.
func (l *Live) tell(f Finding) {
	if l.forgotten(f.at) || !l.told.add(f) {
		return
	}
	if l.onFinding != nil {
		l.onFinding(f)
	}
}

// forgotten reports whether a finding at at is older than the engine
// keeps findings (Config.Forget).
func (l *Live) forgotten(at time.Time) bool {
	return l.d.cfg.Forget > 0 && at.Before(l.d.now.Add(-l.d.cfg.Forget))
}

// AddDecoded takes one exchange after the timeline has taken its events
// (see Engine.AddDecoded) and tells what it revealed.
func (l *Live) AddDecoded(d *decode.Decoded) {
	l.d.AddDecoded(d)
	for _, g := range l.d.takeChanged() {
		l.dirty[g] = true
	}
	l.publish(false)
}

// Advance moves the diagnosis clock to now (see Engine.Advance), and
// tells what is due.
func (l *Live) Advance(now time.Time) {
	l.d.Advance(now)
	l.publish(false)
}

// publish tells the findings not told yet of the groups something may
// have revealed one of (all of them: every group kept), and the blocks of
// the storms that ended, once publishEvery has passed since it last did
// (at once with all, or when a storm ended), and publishes those groups'
// findings for readers.
func (l *Live) publish(all bool) {
	if l.d.now.Sub(l.toldPrun) >= pruneEvery {
		l.toldPrun = l.d.now
		if l.d.cfg.Forget > 0 {
			l.told.forget(l.d.now.Add(-l.d.cfg.Forget))
		}
	}
	for _, g := range l.d.takeChanged() { // by Advance or Close
		l.dirty[g] = true
	}
	l.staleCounts()
	if !all && len(l.stormsEnded) == 0 && (len(l.dirty) == 0 || l.d.now.Sub(l.published) < publishEvery) {
		return // nothing new (most exchanges), or not yet
	}
	l.published = l.d.now
	only := make(map[string]bool, len(l.dirty)+len(l.stormsEnded))
	for id := range l.dirty {
		only[id] = true
	}
	for _, id := range l.stormsEnded {
		only[id] = true
	}
	clear(l.dirty)
	ended := l.stormsEnded
	l.stormsEnded = nil
	if all {
		only = nil
	}
	fs := l.d.findingsOf(only, true)
	for _, f := range fs {
		l.tell(f)
	}
	l.recount(only, fs)
	for _, group := range ended {
		l.afterStorm(group, stormFindings(l.tl.Views([]string{group}), fs, group))
	}
}

// staleCounts marks dirty the counted groups whose findings may have
// changed without an entry or an event saying so: after the
// engine pruned (once a minute of event time), those with a finding that
// has become older than Config.Forget since they were counted (the prune
// may have dropped it; what else it forgets, connections and settled
// handovers, changes no finding's count or severity);
// and those the timeline forgot (retention: the last published snapshot
// no longer holds them; a group not published yet is not one). Those
// whose state the prune dropped (the group was quiet for Config.Forget)
// are counted again at once from the warnings the engine still keeps of
// them, without the timeline's report: the timeline forgets them within
// a minute of event time (serve gives both the same age), and their
// report would build their state again.
func (l *Live) staleCounts() {
	if l.d.pruned != l.countsPruned {
		l.countsPruned = l.d.pruned
		cutoff := l.d.now.Add(-l.d.cfg.Forget)
		gone := map[string]bool{}
		for id, c := range l.counts {
			switch {
			case l.d.groups[id] == nil:
				gone[id] = true
			case !c.next.IsZero() && c.next.Before(cutoff):
				l.dirty[id] = true
			}
		}
		if len(gone) > 0 {
			l.recount(gone, l.d.findingsOf(gone, false))
		}
	}
	if snap, old := l.tl.Snapshot(), l.countsSnap; snap != old {
		l.countsSnap = snap
		for id := range l.counts {
			if !snap.Has(id) && old != nil && old.Has(id) {
				l.dirty[id] = true
			}
		}
	}
}

// recount sets the counts of the groups in only (nil: every group) from
// fs, their findings, and publishes their findings and counts for
// readers; the other groups' stay as published.
func (l *Live) recount(only map[string]bool, fs []Finding) {
	var found *foundSet
	if only == nil {
		clear(l.counts)
		found = emptyFound()
	} else {
		old := l.found.Load()
		found = new(foundSet)
		*found = *old
		var copied [foundParts]bool
		for id := range only {
			delete(l.counts, id)
			if i := partOf(id); !copied[i] {
				copied[i] = true
				found[i] = old[i].without(only)
			}
		}
	}
	// fs holds findings of the groups in only alone: their parts are
	// copies, this publish's own.
	for _, f := range fs {
		p := found[partOf(f.Group)]
		p.findings[f.Group] = append(p.findings[f.Group], f)
	}
	fresh := CountFindings(fs)
	for id, c := range fresh {
		l.counts[id] = counted{FindingCount: c}
	}
	if l.d.cfg.Forget > 0 {
		cutoff := l.d.now.Add(-l.d.cfg.Forget)
		for _, f := range fs { // groups in only, or every group
			if c := l.counts[f.Group]; !f.at.Before(cutoff) && (c.next.IsZero() || f.at.Before(c.next)) {
				c.next = f.at
				l.counts[f.Group] = c
			}
		}
	}
	for id, c := range fresh {
		found[partOf(id)].counts[id] = c
	}
	l.found.Store(found)
}

// Counts is, by group, the count and the worst severity of its findings
// as of the last time something revealed or dropped one of them (a new
// generation, a departure, an event, the engine forgetting old findings,
// the timeline forgetting the group): what GroupFindings returns. Groups
// without findings have no entry. The map is the caller's. Any goroutine
// may call it.
func (l *Live) Counts() map[string]FindingCount {
	out := map[string]FindingCount{}
	for _, p := range l.found.Load() {
		maps.Copy(out, p.counts)
	}
	return out
}

// stormFindings is the findings of group from the first rebalance of its
// latest ended storm to the storm's end; views are the group's histories.
func stormFindings(views []timeline.GroupView, fs []Finding, group string) []Finding {
	var from, to time.Time
	for _, gr := range views {
		for _, st := range gr.Storms {
			if !st.Ended.IsZero() {
				from, to = st.From, st.Ended
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

// Findings is every finding as published: the one page FindingsPage
// makes of every group.
func (l *Live) Findings() []Finding {
	fs, _ := l.FindingsPage(timeline.Query{})
	return fs
}

// FindingsPage is the findings of the groups of q's page, as published,
// and the id to pass as q.After for the next page ("" when this is the
// last). The page's groups are those q.Groups names (none: every group
// the timeline's snapshot holds or with findings) whose ids sort after
// q.After, at most q.Limit of them (0: no limit), in id order; a page may
// hold no finding. Of their findings, those at or after q.Since (or of
// unknown time) are kept, sorted by time. Any goroutine may call it.
func (l *Live) FindingsPage(q timeline.Query) ([]Finding, string) {
	found := l.found.Load()
	ids := l.tl.Snapshot().IDs()
	for _, p := range found {
		for id := range p.findings {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	page, next := q.Page(slices.Compact(ids))
	var out []Finding
	for _, id := range page {
		for _, f := range found[partOf(id)].findings[id] {
			if f.at.IsZero() || !f.at.Before(q.Since) { // of unknown time: kept, as Query keeps it
				out = append(out, f)
			}
		}
	}
	return sortFindings(out), next
}

// GroupFindings is the findings of group as published; [] none. Any
// goroutine may call it.
func (l *Live) GroupFindings(group string) []Finding {
	return append([]Finding{}, l.found.Load()[partOf(group)].findings[group]...)
}

// Close settles the timeline as of at and publishes its final snapshot
// (see timeline.Live.Close), and tells what that reveals.
func (l *Live) Close(at time.Time) {
	l.tl.Close(at)
	l.settle(at)
}

// Settle is Close without the timeline's final snapshot (see
// timeline.Live.Settle): for replay, which reads the timeline's report,
// never its snapshot. It tells the same findings and storm blocks;
// Findings, GroupFindings and Counts read the snapshot as it was.
func (l *Live) Settle(at time.Time) {
	l.tl.Settle(at)
	l.settle(at)
}

// settle tells what settling the timeline as of at revealed.
func (l *Live) settle(at time.Time) {
	l.d.Advance(at)
	l.publish(true)
}
