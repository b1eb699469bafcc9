package timeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// How often a group's published summary is rebuilt at most: within
// tellEvery of an entry it told, and within refreshEvery of other events
// (heartbeats, commits: its last-seen time lags by that much). A busy
// proxy rebuilds each group's summary at most once per tellEvery, however
// fast its groups rebalance.
const (
	tellEvery    = time.Second
	refreshEvery = 10 * time.Second
)

// Live is a Retaining engine that publishes what it tells: the boundary
// where a live proxy's retention policy is applied. One goroutine owns
// it, the pipeline's: it adds events (AddEvents) and, a few times a
// second, publishes an immutable Snapshot of what changed (Publish):
// the groups' summaries, which readers on any goroutine take with
// Snapshot without waiting for anything. A reader that wants a group's
// report asks the snapshot, which has it rendered by the owner (see
// SetOwner). Every method but Snapshot is the owner's; nothing is locked.
type Live struct {
	onEntry func(Entry)
	every   time.Duration // Config.PublishEvery
	// publishedAt is when the last snapshot was published (wall clock).
	publishedAt time.Time

	e *Retaining
	// told are the groups with entries since the last publish, touched
	// those with events; built is when each group's published summary
	// was built (wall clock).
	told, touched map[string]bool
	built         map[string]time.Time

	// do runs a function on the owner for a reader (SetOwner); nil: on
	// the reader's goroutine.
	do func(ctx context.Context, fn func()) error

	snap atomic.Pointer[Snapshot]
}

// NewLive returns a Live engine with cfg (see Config), keeping what r says
// (see Retention). Config.MaxGenerations is r.Generations when that is set.
func NewLive(cfg Config, r Retention) *Live {
	l := &Live{onEntry: cfg.OnEntry, every: cfg.PublishEvery,
		told: map[string]bool{}, touched: map[string]bool{}, built: map[string]time.Time{}}
	cfg.OnEntry = func(en Entry) {
		l.told[en.Group] = true
		if l.onEntry != nil {
			l.onEntry(en)
		}
	}
	l.e = NewRetaining(cfg, r)
	l.snap.Store(&Snapshot{render: l.render})
	return l
}

// SetOwner makes do run the functions with which readers of the snapshots
// have reports rendered (Snapshot.GroupJSON, Snapshot.Report): do runs fn
// on the goroutine that owns l then (a pipeline.Owner's Do), or fails with
// ctx's error. Without it they run on the reader's goroutine, which must
// then be the owner's (tests). It is called before any reader reads.
func (l *Live) SetOwner(do func(ctx context.Context, fn func()) error) { l.do = do }

// RenderWait is how long a reader of a live snapshot waits at most for the
// owner to render the reports it asked for: the owner renders between two
// exchanges, and a pipeline far behind its queue may take a while to come
// to it.
const RenderWait = 10 * time.Second

// render renders the reports of the groups ids as JSON, on the owner, for
// the snapshots: nil for a group no longer kept. It waits for the owner
// until ctx is done, RenderWait at most.
func (l *Live) render(ctx context.Context, ids []string) ([][]byte, error) {
	out := make([][]byte, len(ids))
	fn := func() {
		for i, id := range ids {
			g := l.e.byID[id]
			switch {
			case g == nil:
			case g.dormant != nil:
				out[i] = g.dormant.json() // its only copy
			default:
				gr := g.report()
				out[i] = encodeReport(&gr)
			}
		}
	}
	if l.do == nil {
		fn()
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, RenderWait)
	defer cancel()
	if err := l.do(ctx, fn); err != nil {
		return nil, fmt.Errorf("timeline: render: %w", err)
	}
	return out, nil
}

// Asleep is how many of the groups kept are dormant (see dormant.go) and
// the bytes their compressed reports and views hold.
func (l *Live) Asleep() (groups, bytes int) {
	for _, g := range l.e.byID {
		if d := g.dormant; d != nil {
			groups++
			bytes += len(d.frame)
		}
	}
	return groups, bytes
}

// AddEvents adds events (see Engine.AddEvents); entries go to
// Config.OnEntry on the calling goroutine, and the retention is applied
// (see Retaining). It publishes when Config.PublishEvery has passed since
// the last publish.
func (l *Live) AddEvents(events []decode.Event) {
	l.e.AddEvents(events)
	for _, id := range l.e.slept {
		l.touched[id] = true // published from the summary it keeps
	}
	l.e.slept = l.e.slept[:0]
	for i := range events {
		if g := events[i].Group; g != "" {
			l.touched[g] = true
		}
	}
	l.publishDue()
}

// Advance publishes what changed when Config.PublishEvery has passed
// since the last publish: on the source's ticks (pipeline.TickSource),
// so that what came last before the traffic paused is shown. The
// engine's clock moves only with events.
func (l *Live) Advance(time.Time) { l.publishDue() }

// publishDue publishes when Config.PublishEvery is set and has passed
// since the last publish.
func (l *Live) publishDue() {
	if l.every > 0 && time.Since(l.publishedAt) >= l.every {
		l.publish(false)
	}
}

// Publish rebuilds the summaries of the groups that told entries (at
// most every tellEvery) and of those that saw events (at most every
// refreshEvery), drops those the retention forgot, and publishes a new
// Snapshot.
func (l *Live) Publish() { l.publish(false) }

// publish is Publish; all rebuilds every group that changed at once.
func (l *Live) publish(all bool) {
	now := time.Now()
	l.publishedAt = now
	var changed []*snapGroup
	var gone []string
	for id := range l.told {
		l.touched[id] = true
	}
	for id := range l.touched {
		g := l.e.byID[id]
		switch {
		case g == nil: // forgotten by Retain
			gone = append(gone, id)
		case !all && l.told[id] && now.Sub(l.built[id]) < tellEvery,
			!all && !l.told[id] && now.Sub(l.built[id]) < refreshEvery:
			continue // rebuilt at a later Publish
		case g.dormant != nil:
			changed = append(changed, g.dormant.snap)
			l.built[id] = now
		default:
			changed = append(changed, &snapGroup{id: g.id, lastSeen: g.lastSeen.UTC().Round(0), summary: g.summary()})
			l.built[id] = now
		}
		delete(l.touched, id)
	}
	for id := range l.told {
		if !l.touched[id] {
			delete(l.told, id) // rebuilt
		}
	}
	old := l.snap.Load()
	for _, sg := range old.groups {
		if l.e.byID[sg.id] == nil {
			gone = append(gone, sg.id) // forgotten without an event since
		}
	}
	for _, id := range gone {
		delete(l.built, id)
	}
	l.snap.Store(old.with(changed, gone, l.e.now, l.e.horizon))
}

// Snapshot is the state last published. It never blocks.
func (l *Live) Snapshot() *Snapshot { return l.snap.Load() }

// Close settles what is pending as of at (see Engine.Close) and publishes
// the final state.
func (l *Live) Close(at time.Time) {
	l.Settle(at)
	l.publish(true)
}

// Settle is Close without the final snapshot: for a reader of Report
// alone (replay), which never reads a snapshot.
func (l *Live) Settle(at time.Time) {
	l.e.Close(at)
	for _, g := range l.e.groups {
		l.told[g.id] = true
	}
}

// Report is the whole report of what is kept (see Engine.Report).
func (l *Live) Report() *Report {
	return l.e.Report()
}

// Snapshot is an immutable view of a Live engine's groups as last
// published: readers share it and never modify it. It keeps what lists
// read (each group's summary and last seen time); a group's report is
// rendered when a reader asks for it (GroupJSON, Report): by the Live
// engine's owner for a live snapshot (see Live.SetOwner), from the report
// itself for SnapshotOf's.
type Snapshot struct {
	// At is the latest event time seen when it was published.
	At time.Time
	// Horizon is the time from which the history kept is whole (see
	// Engine.Horizon); zero when nothing was dropped.
	Horizon time.Time
	// groups is sorted by group id. A new snapshot shares the records of
	// the groups that did not change with the one before: a publish
	// copies a pointer per group, not its summary.
	groups []*snapGroup
	// render renders the reports of the groups ids as JSON, nil for a
	// group no longer kept, or fails with ctx's error.
	render func(ctx context.Context, ids []string) ([][]byte, error)
}

// snapGroup is one group in a Snapshot.
type snapGroup struct {
	id       string
	lastSeen time.Time
	summary  GroupSummary // the group at a glance, for lists
}

// newSnapGroup is gr's entry in a Snapshot.
func newSnapGroup(gr *GroupReport) *snapGroup {
	at, _ := time.Parse(time.RFC3339Nano, gr.LastSeen)
	return &snapGroup{id: gr.Group, lastSeen: at, summary: Summarize(gr)}
}

// encodeReport is gr as JSON, as encoding/json writes it.
func encodeReport(gr *GroupReport) []byte {
	b, err := json.Marshal(gr)
	if err != nil {
		panic(fmt.Sprintf("timeline: encode the report of group %s: %v", gr.Group, err)) // plain data: cannot fail
	}
	return b
}

// with returns a new Snapshot: s with the groups changed replaced or
// added and the groups gone removed.
func (s *Snapshot) with(changed []*snapGroup, gone []string, at, horizon time.Time) *Snapshot {
	drop := map[string]bool{}
	for _, id := range gone {
		drop[id] = true
	}
	repl := map[string]*snapGroup{}
	for _, sg := range changed {
		repl[sg.id] = sg
	}
	groups := make([]*snapGroup, 0, len(s.groups)+len(changed))
	for _, sg := range s.groups {
		if drop[sg.id] {
			continue
		}
		if r, ok := repl[sg.id]; ok {
			sg = r
			delete(repl, sg.id)
		}
		groups = append(groups, sg)
	}
	if len(repl) > 0 { // new groups
		for _, sg := range repl {
			groups = append(groups, sg)
		}
		slices.SortFunc(groups, func(a, b *snapGroup) int { return strings.Compare(a.id, b.id) })
	}
	return &Snapshot{At: at, Horizon: horizon, groups: groups, render: s.render}
}

// find is the group id in the snapshot, nil if it holds none.
func (s *Snapshot) find(id string) *snapGroup {
	if i, ok := slices.BinarySearchFunc(s.groups, id, func(sg *snapGroup, id string) int { return strings.Compare(sg.id, id) }); ok {
		return s.groups[i]
	}
	return nil
}

// SnapshotOf is a Snapshot of r, a report that is not live (a finished
// one, a test's), with horizon as its Horizon: for readers written for a
// Live engine's snapshots. Of groups that share an id (a re-created
// group's histories) it shows the latest, as a live snapshot does. Its
// reports are rendered from r, on the reader's goroutine; r must not
// change.
func SnapshotOf(r *Report, horizon time.Time) *Snapshot {
	groups := make([]*snapGroup, len(r.Groups))
	byID := make(map[string]*GroupReport, len(r.Groups))
	at := time.Time{}
	for i := range r.Groups {
		groups[i] = newSnapGroup(&r.Groups[i])
		byID[r.Groups[i].Group] = &r.Groups[i]
		if groups[i].lastSeen.After(at) {
			at = groups[i].lastSeen
		}
	}
	render := func(_ context.Context, ids []string) ([][]byte, error) {
		out := make([][]byte, len(ids))
		for i, id := range ids {
			if gr := byID[id]; gr != nil {
				out[i] = encodeReport(gr)
			}
		}
		return out, nil
	}
	return (&Snapshot{render: render}).with(groups, nil, at, horizon)
}

// Len is the number of groups in the snapshot.
func (s *Snapshot) Len() int { return len(s.groups) }

// Summaries is every group at a glance, sorted by group id: nothing is
// rendered.
func (s *Snapshot) Summaries() []GroupSummary {
	out := make([]GroupSummary, len(s.groups))
	for i := range s.groups {
		out[i] = s.groups[i].summary
	}
	return out
}

// IDs is the ids of the groups the snapshot holds, sorted. The slice is
// the caller's.
func (s *Snapshot) IDs() []string {
	out := make([]string, len(s.groups))
	for i := range s.groups {
		out[i] = s.groups[i].id
	}
	return out
}

// Has reports whether the snapshot holds the group id.
func (s *Snapshot) Has(id string) bool {
	return s.find(id) != nil
}

// GroupJSON is the report of the group id as JSON (a GroupReport as
// encoding/json writes it, as WriteJSON writes each group), rendered now
// (see Snapshot), and whether it is kept: the snapshot holds it and, live,
// the engine still keeps it. It fails with ctx's error when ctx is done
// before the owner has rendered it. The bytes are the caller's.
func (s *Snapshot) GroupJSON(ctx context.Context, id string) ([]byte, bool, error) {
	if !s.Has(id) {
		return nil, false, nil
	}
	out, err := s.render(ctx, []string{id})
	if err != nil {
		return nil, false, err
	}
	return out[0], out[0] != nil, nil
}

// Report is the part of the snapshot q selects, and the id to pass as
// Query.After for the next page ("" when this is the last). The groups are
// those of the snapshot; only the reports of the page are rendered (see
// GroupJSON), and a group the engine no longer keeps is left out. It fails
// with ctx's error when ctx is done before the owner has rendered them.
func (s *Snapshot) Report(ctx context.Context, q Query) (*Report, string, error) {
	var cands []*snapGroup
	if len(q.Groups) > 0 {
		for _, id := range q.Groups {
			if sg := s.find(id); sg != nil {
				cands = append(cands, sg)
			}
		}
		slices.SortFunc(cands, func(a, b *snapGroup) int { return strings.Compare(a.id, b.id) })
		cands = slices.CompactFunc(cands, func(a, b *snapGroup) bool { return a.id == b.id })
	} else {
		cands = s.groups
	}
	var ids []string
	for _, sg := range cands {
		if q.After != "" && sg.id <= q.After || !q.Since.IsZero() && sg.lastSeen.Before(q.Since) {
			continue
		}
		ids = append(ids, sg.id)
		if q.Limit > 0 && len(ids) > q.Limit {
			break // one more than a page: there is a next page
		}
	}
	var page []*GroupReport
	if len(ids) > 0 {
		out, err := s.render(ctx, ids)
		if err != nil {
			return nil, "", err
		}
		for i, b := range out {
			if b == nil {
				continue // no longer kept
			}
			var gr GroupReport
			if err := json.Unmarshal(b, &gr); err != nil {
				panic(fmt.Sprintf("timeline: decode the report of group %s: %v", ids[i], err)) // encoded by encodeReport
			}
			page = append(page, &gr)
		}
	}
	r, next := q.page(page)
	return r, next, nil
}
