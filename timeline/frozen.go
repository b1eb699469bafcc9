package timeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// A live engine keeps the last ten generations of each group (the default
// Retention), but only the last StreamingGenerations are checked against
// by the exchanges that come late; the older ones are read only by reports
// and views, by the commits that name them (who owned what: memberOwned,
// ownerOf, OwnerBefore), by the suspect commits kept in them and by the
// group's summary. Retain freezes such an older generation (see
// canFreeze): its report, rendered as JSON, and its view (frozenview.go),
// without its suspect commits, go to its group's frozen block, those of
// all its frozen generations compressed with zstd as one (they name the
// same members and partitions, which one frame compresses once), and it
// keeps its record (generation), its trigger's kind and how many of its
// commits failed, and drops the rest (wholeGeneration: member records,
// commits, departures, rejoins, partition sets). What the commits ask of
// its members (who owned what: frozenMember) is read back from its report
// when asked, seldom: a commit or a question naming a generation that old.
// Its suspect commits stay as they are, and are added to its report and
// view when they are rendered: a commit may still name the generation.
// What a frozen generation reports and tells is what it would have whole
// (TestFrozenTellsTheSame), but for a SyncGroup or Heartbeat naming it,
// more than StreamingGenerations generations late: it is ignored, as it is
// once the generation is no longer kept (TestFrozenIgnoresLateExchanges).

// frozen is what a frozen generation keeps of its wholeGeneration.
type frozen struct {
	trigger string // its trigger's kind
	failed  int32  // its commits during revocation that failed (GroupSummary.FailedCommits)
}

// triggerKind is the kind of gen's trigger, frozen or not.
func (gen *generation) triggerKind() string {
	if gen.frozen != nil {
		return gen.frozen.trigger
	}
	return gen.trigger.kind
}

// frozenMember is what the commits ask of a frozen generation's member,
// read from its report.
type frozenMember struct {
	id       string
	replaces string     // the member it replaced (KIP-345), "" none
	owned    partitions // its assignment (member.resolved), nil unknown
	replaced bool       // replaced by a static rejoin
}

// canFreeze reports whether g's generation gens[i] may be frozen: g is a
// classic group (the others' generations read topic names and members'
// records across generations), gens[i] is older than the last
// StreamingGenerations and the one before them (whose members the
// generations checked against read), done (stable, superseded or empty),
// has no transactional commit waiting for its transaction's end, and
// neither it nor the next generation has a Kafka Streams member (whose
// report reads the generation before).
func (g *group) canFreeze(i int) bool {
	gen := g.gens[i]
	if gen.frozen != nil || i >= len(g.gens)-StreamingGenerations-1 || g.e.wholeGenerations {
		return false
	}
	if g.consumer != nil || g.streams != nil || g.pastConsumer != nil || len(g.migrations) > 0 || epochMode(gen.mode) {
		return false
	}
	if gen.phase != phaseStable && gen.phase != phaseSuperseded && gen.phase != phaseEmpty {
		return false
	}
	for _, c := range gen.commits {
		if t := c.txn(); t != nil && t.outcome == TxnPending {
			return false
		}
	}
	return !hasStreams(gen) && !hasStreams(g.gens[i+1])
}

// hasStreams reports whether a member of gen is a classic Kafka Streams
// member.
func hasStreams(gen *generation) bool {
	for _, m := range gen.members {
		if x := m.more(); x.streamsSub != nil || x.streamsAsg != nil || x.streamsPlan != nil {
			return true
		}
	}
	return false
}

// freezeOld freezes the generations of g that may be (canFreeze), and
// writes its frozen block again with them, without the generations no
// longer kept.
func (g *group) freezeOld() {
	var fresh []*generation
	for i, gen := range g.gens {
		if g.canFreeze(i) {
			fresh = append(fresh, gen)
		}
	}
	if len(fresh) == 0 {
		return
	}
	var parts []*frozenPart // those kept, then the fresh ones
	oldBuf := scratch()
	defer scratchDone(oldBuf)
	old := g.frozenBlockIn(oldBuf)
	for _, gen := range g.gens {
		if gen.frozen != nil {
			if p := old.part(gen.serial); p != nil {
				parts = append(parts, p)
			}
		}
	}
	for _, gen := range fresh {
		suspects, dropped := gen.suspects, gen.suspectsDropped
		gen.suspects, gen.suspectsDropped = nil, 0
		r, err := json.Marshal(g.generationReport(gen, -1))
		if err != nil {
			panic(fmt.Sprintf("timeline: encode a generation of group %s: %v", g.id, err)) // plain data: cannot fail
		}
		gv := g.generationView(gen)
		gen.suspects, gen.suspectsDropped = suspects, dropped
		parts = append(parts, &frozenPart{serial: gen.serial, report: r, view: appendView(nil, &gv)})
		freeze(gen)
	}
	size := 0
	for _, p := range parts {
		size += 3*binary.MaxVarintLen64 + len(p.report) + len(p.view)
	}
	buf := scratch()
	defer scratchDone(buf)
	b := grow(*buf, size) // one buffer: the parts are a group's history
	for _, p := range parts {
		b = p.append(b)
	}
	*buf = b
	g.zfrozen = compress(zstdFrozen, b)
}

// frozenWhole is the wholeGeneration of every frozen generation: blank,
// shared, never written. A frozen generation reads as one without
// members, commits or lists, as the generation after it sees it (prev).
var frozenWhole = &wholeGeneration{}

// freeze makes gen frozen: it keeps its record, which the handlers and
// the summary still read (numbered, genTime, checkSuspects, summary), and
// drops the rest (its wholeGeneration becomes frozenWhole).
func freeze(gen *generation) {
	f := &frozen{trigger: gen.trigger.kind}
	for i := range gen.commits {
		if gen.commits[i].failed {
			f.failed++
		}
	}
	gen.wholeGeneration, gen.prev, gen.frozen = frozenWhole, nil, f
	gen.index = memberIndex{ver: gen.index.ver + 1}
}

// frozenMemberIn is member id among a frozen generation's members ms (as
// frozenBlock.members reads them from its report); nil when it was not a
// member.
func frozenMemberIn(ms []frozenMember, id string) *frozenMember {
	if i, ok := slices.BinarySearchFunc(ms, id, func(m frozenMember, id string) int { return strings.Compare(m.id, id) }); ok {
		return &ms[i]
	}
	return nil
}

// ownerIn is gen.ownerOf for a generation of g, frozen or not: a frozen
// one's owners are read from its report, and cached as a whole one's are.
func (g *group) ownerIn(gen *generation, topic string, part int32) string {
	if gen.frozen != nil && gen.index.owners == nil {
		owners := partitionOwners{}
		for _, m := range g.frozenBlock().members(gen) {
			if !m.replaced {
				owners.own(m.id, m.owned)
			}
		}
		gen.index.owners = owners
	}
	return gen.ownerOf(topic, part)
}

// frozenPart is a frozen generation's report, as JSON, and view, in the
// form of appendView, without its suspect commits: one record of its
// group's frozen block.
type frozenPart struct {
	serial       uint64 // the generation's serial
	report, view []byte
}

// append is b with p appended: its serial and the lengths of its report
// and view as uvarints, then the two.
func (p *frozenPart) append(b []byte) []byte {
	b = binary.AppendUvarint(b, p.serial)
	b = binary.AppendUvarint(b, uint64(len(p.report)))
	b = binary.AppendUvarint(b, uint64(len(p.view)))
	b = append(b, p.report...)
	return append(b, p.view...)
}

// frozenBlock is a group's frozen block decompressed: its parts, in no
// particular order (a generation held back by a pending transaction
// freezes after newer ones); a part is found by its serial.
type frozenBlock []frozenPart

// frozenBlock is g's frozen block, decompressed into a new slice; empty
// when it has none.
func (g *group) frozenBlock() frozenBlock { return g.frozenBlockIn(new([]byte)) }

// frozenBlockIn is g's frozen block, decompressed into *buf (made larger
// when it is too small), which the block's parts refer to until *buf is
// written again; empty when g has none. What its parts hold is copied out
// by their decoders (the report's JSON, the view's binary form), so that
// the callers that read a block and drop it at once (view, report,
// freezeOld) decompress it into a scratch buffer: a block is several
// kilobytes, decompressed at every view of its group.
func (g *group) frozenBlockIn(buf *[]byte) frozenBlock {
	if g.zfrozen == nil {
		return frozenBlock{}
	}
	b, err := decompress(g.zfrozen, *buf)
	if err != nil {
		panic(fmt.Sprintf("timeline: decompress the frozen generations of group %s: %v", g.id, err)) // compressed by freezeOld
	}
	*buf = b
	var out frozenBlock
	for len(b) > 0 {
		var h [3]uint64
		for i := range h {
			v, n := binary.Uvarint(b)
			if n <= 0 {
				panic(fmt.Sprintf("timeline: a frozen block of group %s is cut short", g.id)) // written by freezeOld
			}
			h[i], b = v, b[n:]
		}
		out = append(out, frozenPart{serial: h[0], report: b[:h[1]:h[1]], view: b[h[1] : h[1]+h[2] : h[1]+h[2]]})
		b = b[h[1]+h[2]:]
	}
	return out
}

// part is the part of the generation serial, nil if none.
func (fb frozenBlock) part(serial uint64) *frozenPart {
	for i := range fb {
		if fb[i].serial == serial {
			return &fb[i]
		}
	}
	return nil
}

// members is what the commits ask of frozen generation gen's members,
// sorted by id, from its report.
func (fb frozenBlock) members(gen *generation) []frozenMember {
	var r struct {
		Members []struct {
			MemberID, Replaces, ReplacedBy string
			Assignment                     map[string][]int32
		}
	}
	if err := json.Unmarshal(fb.part(gen.serial).report, &r); err != nil {
		panic(fmt.Sprintf("timeline: decode a frozen generation: %v", err)) // encoded by freezeOld
	}
	out := make([]frozenMember, len(r.Members)) // sorted by id, as the report lists them
	for i, m := range r.Members {
		out[i] = frozenMember{id: m.MemberID, replaces: m.Replaces, owned: fromMap(m.Assignment), replaced: m.ReplacedBy != ""}
	}
	return out
}

// report is frozen generation gen's report, with its suspects.
func (fb frozenBlock) report(gen *generation) GenerationReport {
	var r GenerationReport
	if err := json.Unmarshal(fb.part(gen.serial).report, &r); err != nil {
		panic(fmt.Sprintf("timeline: decode a frozen generation: %v", err)) // encoded by freezeOld
	}
	suspectsReport(gen, &r)
	return r
}

// view is frozen generation gen's view, with its suspects.
func (fb frozenBlock) view(gen *generation) GenerationView {
	v, err := decodeView(fb.part(gen.serial).view)
	if err != nil {
		panic(fmt.Sprintf("timeline: decode a frozen generation's view: %v", err)) // encoded by freezeOld
	}
	v.Suspects = suspectsView(gen, v.Suspects)
	return v
}

// scratches holds the scratch buffers frozen blocks are decompressed and
// written in (frozenBlockIn, freezeOld): a buffer is used by one call and
// given back before it returns, and the collector frees those not used
// since its last cycle, so that none is held for long.
var scratches = sync.Pool{New: func() any { return new([]byte) }}

// scratch is a scratch buffer from scratches, to give back with
// scratchDone.
func scratch() *[]byte { return scratches.Get().(*[]byte) }

// scratchDone gives buf back to scratches.
func scratchDone(buf *[]byte) { scratches.Put(buf) }
