package timeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/klauspost/compress/zstd"
)

// A group that has ended, every member gone and nothing pending, holds its
// whole history in memory for as long as the retention keeps it (a day by
// default) though nothing but a reader will ever look at it again: short-
// lived groups (console consumers, batch jobs, each run under a new group
// id) end by the hundred a day. Retain makes such a group dormant once it
// has been quiet for dormantAfter: it keeps its report and its typed view
// as they are, as JSON compressed with zstd, the member registry the
// diagnosis names members from, and what Close would still tell of it, and
// drops the rest (generations, partition sets, commits, caches). A group
// whose last member left has the generation that emptied it still to make,
// which Close makes: it sleeps too, keeping also the report and view Close
// would leave, which its Close puts in place. What a
// dormant group tells and reports is what it would have told and reported
// awake: nothing that a sweep or Close could change is left (see
// canSleep). An event for a dormant group's id starts a new history (wake),
// listed after the dormant one as a re-created group's are. One thing
// differs: the retention's age no longer drops a dormant group's
// generations one by one (nor moves Horizon for them) but forgets the
// whole group once it has been quiet for the age, as it does either way.

// dormantAfter is how long a group that has ended must have been quiet
// before Retain makes it dormant: the member registry's forgetAfter, by
// when a member that comes back would be a new member anyway.
const dormantAfter = forgetAfter

// dormant is what a dormant group keeps.
type dormant struct {
	report zdormant   // its report and view, encoded and compressed: their only copy
	snap   *snapGroup // its summary, for the snapshots (never written)
	// incomplete is the text of the rebalance its last member's departure
	// started and no generation followed, which Close tells as never
	// completed ("" when none), and its generation and member.
	incomplete       string
	incompleteGen    int32
	incompleteMember string
	// closed is what the group keeps once closed, when Close makes the
	// generation its last member's departure emptied (materializeEmpty);
	// nil when Close changes no report. closedDrop is when the history
	// that generation's keep dropped ends (see Engine.dropped); zero none.
	closed     *dormant
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
	d := g.asleep(enc)
	if n := g.next; n != nil && n.empty != nil {
		// What Close would make of it, made now: the group changes no more.
		horizon := g.e.horizon
		g.e.horizon = time.Time{}
		g.next = nil
		g.materializeEmpty(n)
		d.closed, d.closedDrop = g.asleep(enc), g.e.horizon
		g.e.horizon = horizon
	} else if n != nil {
		d.incomplete = fmt.Sprintf("a rebalance started at %s (%s) but no generation formed by the end of input",
			clock(n.start, g.e.cfg.Location), n.trigger.kind)
		d.incompleteGen, d.incompleteMember = n.num, n.trigger.member
	}
	for _, lm := range g.live {
		lm.owned = ownedCache{}
	}
	*g = group{e: g.e, id: g.id, index: g.index, incarnation: g.incarnation, ended: g.ended,
		firstSeen: g.firstSeen, lastSeen: g.lastSeen, protocolType: g.protocolType, coordinator: g.coordinator,
		live: g.live, dormant: d}
}

// asleep is g's report, view and summary as a dormant group keeps them,
// its frame compressed by enc.
func (g *group) asleep(enc *zstd.Encoder) *dormant {
	v, err := json.Marshal(g.view())
	if err != nil {
		panic(fmt.Sprintf("timeline: encode the view of group %s: %v", g.id, err)) // plain data: cannot fail
	}
	gr := g.report()
	return &dormant{report: compressDormant(enc, encodeReport(&gr), v), snap: newSnapGroup(&gr)}
}

// closeDormant is close for a dormant group: what close would tell and
// leave.
func (g *group) closeDormant(at time.Time) {
	d := g.dormant
	if d.incomplete != "" {
		g.emit(at, KindIncomplete, d.incompleteGen, d.incompleteMember, d.incomplete, nil)
	}
	if d.closed != nil {
		g.dormant = d.closed
		if !d.closedDrop.IsZero() {
			g.e.dropped(d.closedDrop)
		}
	}
}

// wake starts a new history of the dormant group old, for an event of its
// id: the dormant history is closed and listed first.
func (e *Engine) wake(old *group) *group {
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
	_, vj := d.report.partsIn(buf)
	var v GroupView
	if err := json.Unmarshal(vj, &v); err != nil {
		panic(fmt.Sprintf("timeline: decode a dormant view: %v", err)) // encoded by sleep
	}
	return v
}

// zdormant is a dormant group's report and view as JSON, compressed with
// zstd in one frame against the dormant dictionary (zstd.go): the length
// of the report's JSON as a uvarint, the report's JSON, the view's JSON.
// One frame compresses the view with the report, whose names and numbers
// it repeats; the dictionary, a sample group's report and view, spares
// each frame the field names and the shape every group repeats; the level
// is zstd's "better" (docs/benchmarks.md, "Memory").
type zdormant []byte

// compressDormant is the frame of a report's and a view's JSON,
// compressed by enc (newDormantEncoder).
func compressDormant(enc *zstd.Encoder, report, view []byte) zdormant {
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(report)+len(view)), uint64(len(report)))
	b = append(append(b, report...), view...)
	return compress(enc, b)
}

// parts decompresses z into a new slice and returns the report's and the
// view's JSON in it.
func (z zdormant) parts() (report, view []byte) { return z.partsIn(new([]byte)) }

// partsIn is parts decompressed into *buf (made larger when it is too
// small), which they refer to until *buf is written again.
func (z zdormant) partsIn(buf *[]byte) (report, view []byte) {
	b, err := decompress(z, *buf)
	if err != nil {
		panic(fmt.Sprintf("timeline: decompress a dormant group: %v", err)) // compressed by compressDormant
	}
	*buf = b
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		panic("timeline: a dormant group's frame has no report length") // written by compressDormant
	}
	b = b[k:]
	return b[:n:n], b[n:]
}

// json is the report as JSON, as encodeReport wrote it.
func (z zdormant) json() []byte {
	r, _ := z.parts()
	return r
}

// report decodes the report.
func (z zdormant) report() *GroupReport {
	var gr GroupReport
	if err := json.Unmarshal(z.json(), &gr); err != nil {
		panic(fmt.Sprintf("timeline: decode a dormant report: %v", err)) // encoded by sleep
	}
	return &gr
}
