package timeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// A group that has ended, every member gone and nothing pending, holds its
// whole history in memory for as long as the retention keeps it (a day by
// default) though nothing but a reader will ever look at it again: short-
// lived groups (console consumers, batch jobs, each run under a new group
// id) end by the hundred a day. Retain makes such a group dormant once it
// has been quiet for dormantAfter: it keeps its report and its typed view
// as they are, as JSON compressed with zstd, the facts of the member
// registry the diagnosis names members from (a sorted slice, not the
// registry's map of records), and what Close would still tell of it, and
// drops the rest (generations, partition sets, commits, caches). What a
// dormant group tells and reports is what it would have told and reported
// awake: nothing that a sweep or Close could change is left (see
// canSleep), but for the generation Close makes of a group its last
// member's departure emptied, which sleep makes, keeping the report and
// view Close leaves for its Close to put in place. An event for a dormant
// group's id starts a new history (wake), listed after the dormant one as
// a re-created group's are. One thing differs: the retention's age no
// longer drops a dormant group's generations one by one (nor moves Horizon
// for them) but forgets the whole group once it has been quiet for the
// age, as it does either way.

// dormantAfter is how long a group that has ended must have been quiet
// before Retain makes it dormant: the member registry's forgetAfter, by
// when a member that comes back would be a new member anyway.
const dormantAfter = forgetAfter

// dormant is what a dormant group keeps.
type dormant struct {
	// frame is its report and view, encoded and compressed: their only
	// copy; with, when Close makes the generation its last member's
	// departure emptied (materializeEmpty: closes), the report and view
	// Close leaves, which d tells once closed. snap is its summary, for
	// the snapshots, replaced (never written) by Close's.
	frame          zdormant
	closes, closed bool
	snap           *snapGroup
	// members is the facts of its member registry, by member id.
	members []MemberFacts

	// incomplete is the text of the rebalance its last member's departure
	// started and no generation followed, which Close tells as never
	// completed ("" when none), and its generation and member.
	incomplete       string
	incompleteGen    int32
	incompleteMember string
	// closedDrop is when the history that the emptied generation's keep
	// drops ends (see Engine.dropped); zero none.
	closedDrop time.Time
}

// canSleep reports whether g may become dormant as of now: quiet for
// dormantAfter; a classic group (KIP-848, share and streams groups keep
// their state); not blind; every member of its latest generation gone;
// no MEMBER_ID_REQUIRED retry awaited, no transactional commit waiting for
// its EndTxn; and nothing Close would change but the emptied group's
// generation it makes (see sleep): no generation joining or syncing, no
// cooperative revocation never followed up, no storm under way.
func (g *group) canSleep(now time.Time) bool {
	if g.dormant != nil || g.ended || now.Sub(g.lastSeen) < dormantAfter {
		return false
	}
	if g.consumer != nil || g.streams != nil || g.pastConsumer != nil || len(g.migrations) > 0 || g.blind || len(g.pendingIDs) > 0 || g.storm.active != nil {
		return false
	}
	latest := g.latest()
	if latest == nil || latest.phase != phaseStable && latest.phase != phaseEmpty {
		return false
	}
	for id := range latest.members {
		if lm := g.live[id]; latest.active(id) && (lm == nil || !lm.gone) {
			return false
		}
	}
	if n := g.next; n != nil && n.empty != nil && !g.dropKnown() {
		return false
	}
	if latest.mode == ModeCooperative && g.next == nil && revokedAny(latest) {
		return false
	}
	if g.e.pendingTxns > 0 {
		for _, pts := range g.e.txns {
			for _, pt := range pts {
				if pt.g == g {
					return false
				}
			}
		}
	}
	return true
}

// dropKnown reports whether what Close's keep of the emptied group's
// generation drops (dropOldest) ends at a time the group knows now: it
// drops nothing, or the generation it leaves oldest has a time (else
// Close would note the time it closes at).
func (g *group) dropKnown() bool {
	n := len(g.gens) + 1 - g.e.cfg.MaxGenerations
	return n <= 0 || n >= len(g.gens) || !genTime(g.gens[n]).IsZero()
}

// sleep makes g dormant (see canSleep), its frame compressed by enc
// (newDormantEncoder).
func (g *group) sleep(enc *zstd.Encoder) {
	gr := g.report()
	parts := [][]byte{encodeReport(&gr), g.viewJSON()}
	d := &dormant{snap: newSnapGroup(&gr)}
	if n := g.next; n != nil && n.empty != nil {
		// What Close would make of it, made now: the group changes no more.
		horizon := g.e.horizon
		g.e.horizon = time.Time{}
		g.next = nil
		g.materializeEmpty(n)
		closed := g.report()
		parts = append(parts, encodeReport(&closed), g.viewJSON())
		d.closes, d.closedDrop = true, g.e.horizon
		g.e.horizon = horizon
	} else if n != nil {
		d.incomplete = fmt.Sprintf("a rebalance started at %s (%s) but no generation formed by the end of input",
			clock(n.start, g.e.cfg.Location), n.trigger.kind)
		d.incompleteGen, d.incompleteMember = n.num, n.trigger.member
	}
	d.frame = compressDormant(enc, parts...)
	d.members = make([]MemberFacts, 0, len(g.live))
	for _, lm := range g.live {
		d.members = append(d.members, lm.facts())
	}
	slices.SortFunc(d.members, func(a, b MemberFacts) int { return strings.Compare(a.MemberID, b.MemberID) })
	*g = group{e: g.e, id: g.id, index: g.index, incarnation: g.incarnation, ended: g.ended,
		firstSeen: g.firstSeen, lastSeen: g.lastSeen, protocolType: g.protocolType, coordinator: g.coordinator,
		dormant: d}
}

// member is the facts of member id of the dormant group's registry; ok
// is false when it has none.
func (d *dormant) member(id string) (_ MemberFacts, ok bool) {
	i, ok := slices.BinarySearchFunc(d.members, id, func(m MemberFacts, id string) int { return strings.Compare(m.MemberID, id) })
	if !ok {
		return MemberFacts{}, false
	}
	return d.members[i], true
}

// viewJSON is g's view as JSON.
func (g *group) viewJSON() []byte {
	v, err := json.Marshal(g.view())
	if err != nil {
		panic(fmt.Sprintf("timeline: encode the view of group %s: %v", g.id, err)) // plain data: cannot fail
	}
	return v
}

// closeDormant is close for a dormant group: what close would tell and
// leave.
func (g *group) closeDormant(at time.Time) {
	d := g.dormant
	if d.incomplete != "" {
		g.emit(at, KindIncomplete, d.incompleteGen, d.incompleteMember, d.incomplete, nil)
	}
	if d.closes && !d.closed {
		d.closed = true
		d.snap = newSnapGroup(d.report())
		if !d.closedDrop.IsZero() {
			g.e.dropped(d.closedDrop)
		}
	}
}

// wake starts a new history of the dormant group old, for an event of its
// id: the dormant history is closed and listed first. An emptied group's
// history ends with the empty generation Close makes, as a re-created
// group's does (see reincarnate).
func (e *Engine) wake(old *group) *group {
	if d := old.dormant; d.closes && !d.closed {
		old.closeDormant(e.now)
	}
	g := newGroup(e, old.id)
	g.index = len(e.groups)
	g.incarnation = old.incarnation + 1
	e.byID[old.id] = g
	e.groups = append(e.groups, g)
	e.quiet = append(e.quiet, time.Time{})
	old.ended = true
	return g
}

// view is the dormant group's view, decoded. The frame is decompressed
// into a scratch buffer (frozen.go): the decoder copies what it keeps, and
// the diagnosis reads the views of the dormant groups with a gone member
// every few minutes.
func (d *dormant) view() GroupView {
	buf := scratch()
	defer scratchDone(buf)
	_, vj := d.pairIn(buf)
	var v GroupView
	if err := json.Unmarshal(vj, &v); err != nil {
		panic(fmt.Sprintf("timeline: decode a dormant view: %v", err)) // encoded by sleep
	}
	return v
}

// pairIn is the report's and the view's JSON d tells, its frame
// decompressed into *buf (see zdormant.partsIn): the frame's first pair,
// or its second once closed.
func (d *dormant) pairIn(buf *[]byte) (report, view []byte) {
	n := 2
	if d.closes {
		n = 4
	}
	parts := d.frame.partsIn(buf, n)
	if d.closed {
		return parts[2], parts[3]
	}
	return parts[0], parts[1]
}

// json is the report as JSON, as encodeReport wrote it.
func (d *dormant) json() []byte {
	r, _ := d.pairIn(new([]byte))
	return r
}

// report decodes the report.
func (d *dormant) report() *GroupReport {
	var gr GroupReport
	if err := json.Unmarshal(d.json(), &gr); err != nil {
		panic(fmt.Sprintf("timeline: decode a dormant report: %v", err)) // encoded by sleep
	}
	return &gr
}

// zdormant is a dormant group's report and view as JSON, compressed with
// zstd in one frame against the dormant dictionary (zstd.go): the parts
// in order, each but the last preceded by its length as a uvarint (the
// report's JSON, the view's JSON, and for a group whose Close makes a
// generation, the report's and the view's it leaves). One frame
// compresses the view with the report, whose names and numbers it
// repeats, and what Close leaves with what it changes; the dictionary, a
// sample group's report and view, spares each frame the field names and
// the shape every group repeats; the level is zstd's "better"
// (docs/benchmarks.md, "Memory").
type zdormant []byte

// compressDormant is the frame of parts, a report's and a view's JSON in
// pairs, compressed by enc (newDormantEncoder).
func compressDormant(enc *zstd.Encoder, parts ...[]byte) zdormant {
	n := 0
	for _, p := range parts {
		n += binary.MaxVarintLen64 + len(p)
	}
	b := make([]byte, 0, n)
	for i, p := range parts {
		if i < len(parts)-1 {
			b = binary.AppendUvarint(b, uint64(len(p)))
		}
		b = append(b, p...)
	}
	return compress(enc, b)
}

// partsIn decompresses z, a frame of n parts, into *buf (made larger
// when it is too small) and returns the parts, which refer to it until
// *buf is written again.
func (z zdormant) partsIn(buf *[]byte, n int) [][]byte {
	b, err := decompress(z, *buf)
	if err != nil {
		panic(fmt.Sprintf("timeline: decompress a dormant group: %v", err)) // compressed by compressDormant
	}
	*buf = b
	parts := make([][]byte, 0, n)
	for len(parts) < n-1 {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			panic("timeline: a dormant group's frame has a part without its length") // written by compressDormant
		}
		b = b[k:]
		parts, b = append(parts, b[:l:l]), b[l:]
	}
	return append(parts, b)
}
