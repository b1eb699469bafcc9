package diagnose

import (
	"cmp"
	"iter"
	"slices"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// Config tunes an Engine. The zero value is usable: every field has a
// default.
type Config struct {
	// OnFinding is called with each live warning as soon as it is found
	// (from AddDecoded, Entry or Advance), on the caller's goroutine. nil
	// means nobody is told; the warnings are still in Findings.
	OnFinding func(Finding)
	// EagerLargeGroup is the member count from which an eager group is
	// large (eager_large_group). Default 10.
	EagerLargeGroup int
	// UnownedAfter is how long a stable generation must leave a partition
	// without owner, or a member without partitions, to make a
	// partition_unowned or member_without_partitions finding. Default 30 s.
	UnownedAfter time.Duration
	// FlapWindow is how soon a partition must come back to its previous
	// owner to count as a flap. Default 10 minutes.
	FlapWindow time.Duration
	// RolloutGap is how far apart two restarts may be and belong to one
	// rollout, and how long a restarted instance may take to come back.
	// Default 5 minutes.
	RolloutGap time.Duration
	// Forget is how long the engine keeps a finding, and a group with
	// no event: serve sets it to its timeline's retention age
	// (--timeline-retain), so that the diagnosis' memory does not grow
	// with the proxy's uptime any more than the timeline's. Zero keeps
	// everything, as a journal's diagnosis does.
	Forget time.Duration
	// Groups, when not empty, are the only groups the engine keeps state
	// for and finds anything of: the other groups' events and entries only
	// move its clock (as timeline.Config.Groups, for replay --group and
	// diagnose --group). Connections that fetched are still kept for
	// every client: a connection is attributed to a member only when its
	// findings are made.
	Groups []string
}

func (c Config) withDefaults() Config {
	if c.EagerLargeGroup <= 0 {
		c.EagerLargeGroup = 10
	}
	if c.UnownedAfter <= 0 {
		c.UnownedAfter = 30 * time.Second
	}
	if c.FlapWindow <= 0 {
		c.FlapWindow = 10 * time.Minute
	}
	if c.RolloutGap <= 0 {
		c.RolloutGap = 5 * time.Minute
	}
	return c
}

// Engine turns events, timeline entries and what the timeline knows into
// findings. It reads the timeline it feeds (see AddEvents): one goroutine
// owns both, and neither is safe for concurrent use.
type Engine struct {
	cfg Config
	// tl is the timeline the engine feeds and reads; own is tl when New
	// made it.
	tl     reader
	own    *timeline.Engine
	groups map[string]*groupState
	conns  map[string]*connState // connections that fetched, by client address
	idents map[string]identConn  // the others, by client address
	// byClient indexes conns by client host and client id.
	byClient map[connKey]map[string]*connState
	now      time.Time
	warnings []Finding
	pending  []timeline.Entry // entries not applied yet (see Entry)
	pruned   time.Time        // the last prune
	// forgotGone is the last prune that dropped the records of gone
	// members no finding needs (forgetMembers).
	forgotGone time.Time
	// checkAt is the earliest time a silence warning may be due: advance
	// looks at the members only from then (zero: at the next advance).
	// Whatever may bring a threshold earlier lowers it (expect).
	checkAt time.Time
	// open is the handovers waiting to learn where the new owner
	// resumed, by partition (see window.go).
	open map[tp][]*handover
	// order is the groups in order of first appearance.
	order []*groupState
	// changed is the groups whose event findings may have changed since
	// the last takeChanged: a finding added, a handover made or settled,
	// a heartbeat cadence found too slow. Live recomputes the findings of
	// these groups only.
	changed map[string]bool
	// only is Config.Groups as a set; nil finds every group.
	only map[string]bool
}

// farFuture is checkAt when no threshold is pending.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// expect lowers the group's and the engine's checkAt to member id's
// silence threshold, as the timeline knows its last accepted request and
// its session timeout.
func (e *Engine) expect(g *groupState, id string) {
	m, ok := e.tl.Member(g.id, id)
	if !ok || m.SessionTimeout <= 0 || m.LastAlive.IsZero() {
		return
	}
	at := m.LastAlive.Add(fraction(m.SessionTimeout))
	if !g.checkAt.IsZero() && at.Before(g.checkAt) {
		g.checkAt = at
	}
	if !e.checkAt.IsZero() && at.Before(e.checkAt) {
		e.checkAt = at
	}
}

// recheck makes the next advance look at g's members.
func (e *Engine) recheck(g *groupState) {
	g.checkAt, e.checkAt = time.Time{}, time.Time{}
}

// reader is what the engine feeds and reads of its timeline: a
// *timeline.Engine (New) or a *timeline.Live (NewLive).
type reader interface {
	AddEvents(events []decode.Event)
	// Views is the kept histories of the groups ids (nil: every group).
	Views(ids []string) []timeline.GroupView
	Member(group, id string) (timeline.MemberFacts, bool)
	Members(group string) iter.Seq[timeline.MemberFacts]
	OwnerBefore(group string, num int32, id, topic string, part int32) string
	Committed(group, topic string, part int32) (int64, bool)
	TopicName(name string, id decode.TopicID) string
	PartitionCount(topic string) int32
}

// New returns an Engine with cfg, defaults applied, reading the timeline
// engine it makes with tcfg (Timeline), whose OnEntry is still called
// with every entry.
func New(cfg Config, tcfg timeline.Config) *Engine {
	e := newEngine(cfg)
	next := tcfg.OnEntry
	tcfg.OnEntry = func(en timeline.Entry) {
		if next != nil {
			next(en)
		}
		e.Entry(en)
	}
	e.own = timeline.New(tcfg)
	e.tl = e.own
	return e
}

// Timeline is the timeline engine New made, which the Engine feeds: to
// close it and read its report.
func (e *Engine) Timeline() *timeline.Engine { return e.own }

// newEngine is an Engine with cfg, defaults applied, without its timeline.
func newEngine(cfg Config) *Engine {
	e := &Engine{cfg: cfg.withDefaults(), groups: map[string]*groupState{}, conns: map[string]*connState{},
		idents: map[string]identConn{}, byClient: map[connKey]map[string]*connState{}, open: map[tp][]*handover{},
		changed: map[string]bool{}}
	for _, id := range cfg.Groups {
		if e.only == nil {
			e.only = map[string]bool{}
		}
		e.only[id] = true
	}
	return e
}

// finds reports whether the engine keeps state for the group id (see
// Config.Groups).
func (e *Engine) finds(id string) bool { return e.only == nil || e.only[id] }

// mark records that g's event findings may have changed.
func (e *Engine) mark(g *groupState) { e.changed[g.id] = true }

// takeChanged returns the groups marked since the last call, in no
// particular order, and forgets them.
func (e *Engine) takeChanged() []string {
	if len(e.changed) == 0 {
		return nil
	}
	ids := make([]string, 0, len(e.changed))
	for id := range e.changed {
		ids = append(ids, id)
	}
	clear(e.changed)
	return ids
}

// AddEvents takes the events decoded from one exchange, before its
// timeline does: the engine's clock moves to the exchange's completion,
// and the live warnings due by then are raised on what the timeline knew
// before the exchange; then the timeline takes the events. The pipeline
// hands the events to the Engine, not to its timeline
// (pipeline.Config.Events), one exchange at a time (as it does when
// pipeline.Config.Decoded is set). Neither the slice nor the events are
// kept.
func (e *Engine) AddEvents(events []decode.Event) {
	e.advance(completedAt(nil, events))
	e.applyEntries()
	e.tl.AddEvents(events)
}

// AddDecoded takes one exchange, the events decoded from it and its
// decoded Fetch or ApiVersions request, in the order the exchanges
// completed, after the timeline has taken the same events (AddEvents, so
// that the entries they caused came first, through Entry): the pipeline
// calls it so (pipeline.Config.Decoded). Nothing of d is kept.
func (e *Engine) AddDecoded(d *decode.Decoded) {
	e.advance(completedAt(d.X, d.Events))
	e.applyEntries()
	if d.Fetch != nil {
		e.fetch(d.X, d.Fetch)
	}
	if d.Software != (decode.ClientSoftware{}) {
		e.apiVersions(d.X, d.Software)
	}
	if d.X != nil {
		e.connSeen(d.X)
	}
	for i := range d.Events {
		e.event(&d.Events[i])
	}
}

// Entry takes one timeline entry, as the timeline engine emits it. The
// entry takes effect at the next AddDecoded, Advance or Findings, after the
// clock has moved to the completion of the exchange that caused it: the
// live warnings are then decided on the state as it was before that
// exchange, whether or not a tick called Advance in between.
func (e *Engine) Entry(en timeline.Entry) {
	e.pending = append(e.pending, en)
}

// completedAt is when the exchange completed: its response, or its request
// without one; from the events when x is nil.
func completedAt(x *decode.Exchange, events []decode.Event) time.Time {
	if x != nil {
		if !x.ResponseAt.IsZero() {
			return x.ResponseAt
		}
		return x.RequestAt
	}
	var t time.Time
	for i := range events {
		t = later(t, later(events[i].At, events[i].RespondedAt))
	}
	return t
}

// applyEntries applies the entries received since the last call.
func (e *Engine) applyEntries() {
	for _, en := range e.pending {
		if e.finds(en.Group) {
			e.entry(en)
		}
	}
	e.pending = e.pending[:0]
}

func (e *Engine) entry(en timeline.Entry) {
	g := e.group(en.Group)
	switch en.Kind {
	case timeline.KindRebalanceStarted:
		if !g.rebalancing {
			g.rebalancing, g.rebalanceStart = true, en.At
		}
	case timeline.KindStable, timeline.KindGroupEmpty:
		g.rebalancing = false
		e.recheck(g) // its members are looked at again
	}
}

// Advance moves the engine's clock to now when no exchange has for a
// while: serve calls it on the source's ticks so that live warnings come when
// their threshold passes. A time not after the latest one seen does
// nothing.
func (e *Engine) Advance(now time.Time) {
	e.advance(now)
	e.applyEntries()
}

// advance moves the clock and raises the warnings whose thresholds the
// new time passes, with the state as it was before the fact at now.
func (e *Engine) advance(now time.Time) {
	if !now.After(e.now) {
		return
	}
	e.now = now
	if e.checkAt.IsZero() || !now.Before(e.checkAt) {
		// Only the groups whose own earliest threshold passed are looked
		// at, in order of first appearance.
		e.checkAt = farFuture
		for _, g := range e.order {
			if g.checkAt.IsZero() || !now.Before(g.checkAt) {
				g.checkAt = g.checkSilence(e, now)
				if g.checkAt.IsZero() {
					g.checkAt = farFuture // rebalancing, or nobody to watch
				}
			}
			if g.checkAt.Before(e.checkAt) {
				e.checkAt = g.checkAt
			}
		}
	}
	if now.Sub(e.pruned) >= pruneEvery {
		e.pruned = now
		e.prune(now)
	}
}

// pruneEvery is how often, in event time, the engine forgets what no
// finding can need any more, so that its memory does not grow with the
// length of the input; forgetAfter is how old that is, and bareAfter how
// long a bare connection (identConn) is kept after its latest request.
const (
	pruneEvery  = time.Minute
	forgetAfter = 10 * time.Minute
	bareAfter   = time.Minute
	keepJoins   = 16 // generations whose offered protocols are kept
)

// prune forgets connections silent for forgetAfter (bare ones, which
// sent no group request nor fetch, for bareAfter), handovers that cannot
// become findings (settled without a window, or never settled), the
// offered protocols of old generations, and, with Config.Forget, the
// findings older than that, the groups quiet for that long and, in the
// others, the members quiet for that long or gone with nothing kept
// naming them (forgetMembers).
func (e *Engine) prune(now time.Time) {
	if f := e.cfg.Forget; f > 0 {
		old := func(x Finding) bool { return x.at.Before(now.Add(-f)) }
		e.warnings = slices.DeleteFunc(e.warnings, old)
		for id, g := range e.groups {
			g.findings = slices.DeleteFunc(g.findings, old)
			if g.last.Before(now.Add(-f)) {
				delete(e.groups, id)
				delete(e.changed, id)
			}
		}
		e.order = slices.DeleteFunc(e.order, func(g *groupState) bool { return e.groups[g.id] != g })
		e.forgetMembers(now, now.Add(-f))
	}
	for addr, c := range e.conns {
		if now.Sub(c.last) > forgetAfter {
			delete(e.conns, addr)
			if c.fetches != nil {
				e.unindex(c)
			}
		}
	}
	for addr, b := range e.idents {
		keep := bareAfter
		if b.used {
			keep = forgetAfter
		}
		if now.UnixNano()-b.last > int64(keep) {
			delete(e.idents, addr)
		}
	}
	for k, hs := range e.open {
		hs = slices.DeleteFunc(hs, func(h *handover) bool { return now.Sub(h.at) > forgetAfter })
		if len(hs) == 0 {
			delete(e.open, k)
		} else {
			e.open[k] = hs
		}
	}
	for _, g := range e.groups {
		g.handovers = slices.DeleteFunc(g.handovers, func(h *handover) bool {
			if h.resumed {
				return h.fromPos.offset <= h.resume
			}
			return now.Sub(h.at) > forgetAfter
		})
		for gen := range g.joins {
			if gen < g.newestJoin-keepJoins {
				delete(g.joins, gen)
			}
		}
	}
}

// forgetMembers forgets, in every group, the members with no request
// since before and, once per forgetAfter, those gone that nothing kept
// names (Engine.forget). The groups with a gone member have their kept
// histories read a few at a time, so that few views are held at once.
func (e *Engine) forgetMembers(now, before time.Time) {
	if now.Sub(e.forgotGone) < forgetAfter {
		for _, g := range e.groups {
			e.forget(g, before, false, nil)
		}
		return
	}
	e.forgotGone = now
	var ids []string
	for id, g := range e.groups {
		if e.anyGone(g, before) {
			ids = append(ids, id)
		} else {
			e.forget(g, before, true, nil) // no gone member: no views read
		}
	}
	for chunk := range slices.Chunk(ids, 64) {
		views := map[string][]timeline.GroupView{}
		for _, v := range e.tl.Views(chunk) {
			views[v.Group] = append(views[v.Group], v)
		}
		for _, id := range chunk {
			e.forget(e.groups[id], before, true, views[id])
		}
	}
}

func (e *Engine) warn(f Finding) {
	e.warnings = append(e.warnings, f)
	if e.cfg.OnFinding != nil {
		e.name(&f) // on a copy of its members
		e.cfg.OnFinding(f)
	}
}

func (e *Engine) group(id string) *groupState {
	g := e.groups[id]
	if g == nil {
		g = newGroupState(id)
		g.last = e.now // a group seen only in a report is forgotten too
		e.groups[id] = g
		e.order = append(e.order, g)
	}
	return g
}

// Findings returns every finding so far: the live warnings, those the
// events showed, and those read from the timeline. Sorted by time, then
// kind and ID; calling it does not change what later calls find.
func (e *Engine) Findings() []Finding {
	return e.findingsOf(nil, true)
}

// findingsOf is Findings restricted to the groups in only (nil: every
// group): what Live recomputes after an exchange changed a few groups.
// A group's findings do not depend on other groups', so the findings of
// each group in only are the same as in Findings. Without views, the
// findings read from the timeline are left out.
func (e *Engine) findingsOf(only map[string]bool, views bool) []Finding {
	e.applyEntries()
	in := func(group string) bool { return only == nil || only[group] }
	var out []Finding
	for _, w := range e.warnings {
		if in(w.Group) {
			out = append(out, w)
		}
	}
	add := func(g *groupState) {
		out = append(out, g.findings...)
		out = append(out, e.duplicateWindows(g)...)
		out = append(out, e.cadence(g)...)
	}
	if only == nil {
		for _, id := range sortedKeys(e.groups) {
			add(e.groups[id])
		}
	} else {
		for _, id := range sortedKeys(only) {
			if g := e.groups[id]; g != nil {
				add(g)
			}
		}
	}
	if views {
		var ids []string
		if only != nil {
			ids = sortedKeys(only)
		}
		vs := e.tl.Views(ids)
		for i := range vs {
			if e.finds(vs[i].Group) {
				out = append(out, e.fromTimeline(&vs[i])...)
			}
		}
	}
	link(out)
	for i := range out {
		normalize(&out[i])
		e.name(&out[i])
	}
	return sortFindings(out)
}

// sortFindings sorts fs by time, then kind and ID, and drops repeated
// IDs; nil becomes empty.
func sortFindings(fs []Finding) []Finding {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
	})
	if fs == nil {
		fs = []Finding{}
	}
	return slices.CompactFunc(fs, func(a, b Finding) bool { return a.ID == b.ID })
}

// fromTimeline is the findings read from one group history of the
// timeline.
func (e *Engine) fromTimeline(gr *timeline.GroupView) []Finding {
	g := e.group(gr.Group)
	var out []Finding
	out = append(out, e.evictions(g, gr)...)
	out = append(out, e.rollouts(g, gr)...)
	out = append(out, e.loops(g, gr)...)
	out = append(out, e.generationSmells(g, gr)...)
	out = append(out, e.flaps(g, gr)...)
	out = append(out, e.unowned(g, gr)...)
	out = append(out, e.idle(g, gr)...)
	out = append(out, e.suspects(g, gr)...)
	out = append(out, e.streams(g, gr)...)
	out = append(out, e.consumer(g, gr)...)
	out = append(out, e.migrationsStalled(g, gr)...)
	return out
}

// link adds to each eviction the warnings that preceded it for the same
// member, in the order fs holds them. The warnings are indexed first, so
// that it costs one pass over fs and one per warning linked.
func link(fs []Finding) {
	pairs := map[Kind]Kind{PollTimeoutEviction: PollTimeoutWarning, SessionTimeoutEviction: SessionTimeoutWarning}
	type key struct {
		kind          Kind
		group, member string
	}
	warnings := map[key][]int{}
	for i := range fs {
		if (fs[i].Kind == PollTimeoutWarning || fs[i].Kind == SessionTimeoutWarning) && len(fs[i].Members) > 0 {
			k := key{fs[i].Kind, fs[i].Group, fs[i].Members[0].MemberID}
			warnings[k] = append(warnings[k], i)
		}
	}
	if len(warnings) == 0 {
		return
	}
	for i := range fs {
		want, ok := pairs[fs[i].Kind]
		if !ok || len(fs[i].Members) == 0 {
			continue
		}
		for _, j := range warnings[key{want, fs[i].Group, fs[i].Members[0].MemberID}] {
			if !fs[j].at.After(fs[i].at) {
				fs[i].Links = append(fs[i].Links, fs[j].ID)
			}
		}
	}
}
