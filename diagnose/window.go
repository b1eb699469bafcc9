package diagnose

import (
	"fmt"
	"slices"
	"time"
	"unique"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/unixnano"
	"github.com/kproxy-dev/kproxy/timeline"
)

// The duplicate-processing window: when a partition moves from A to B,
// B resumes from the last committed offset, while A had already read up
// to its last fetch position. The records in between were handed to A's
// application and are handed to B's again.

// handover is a partition that changed owner at a SyncGroup response.
type handover struct {
	g          *groupState
	at         time.Time
	generation int32
	k          tp
	from, to   string
	// fromPos is the previous owner's last fetch position before at.
	fromPos fetchPos
	// resume is where the new owner resumed (its first fetch, or its
	// OffsetFetch, after at); resumed is false until seen.
	resume  int64
	resumed bool
}

// fetch records a Fetch request's positions on its connection.
func (e *Engine) fetch(x *decode.Exchange, fr *decode.FetchRequest) {
	if fr.ReplicaID >= 0 {
		return // a follower broker's fetch
	}
	c := e.conn(x.ClientAddr, x.ClientID)
	c.last = x.RequestAt
	e.fetched(c)
	for _, t := range fr.Topics {
		name := e.tl.TopicName(t.Topic, t.TopicID)
		for _, p := range t.Partitions {
			k := tp{name, p.Partition}
			c.fetches[k] = fetchPos{p.FetchOffset, x.RequestAt}
			e.resumed(x.ClientAddr, x.ClientID, k, p.FetchOffset, x.RequestAt)
		}
	}
}

// apiVersions records the client software a connection announced.
func (e *Engine) apiVersions(x *decode.Exchange, sw decode.ClientSoftware) {
	if c := e.conns[x.ClientAddr]; c != nil {
		c = e.conn(x.ClientAddr, x.ClientID)
		c.software, c.last = sw, x.RequestAt
		return
	}
	b := e.idents[x.ClientAddr]
	id := connIdent{software: sw}
	if b.ident != (unique.Handle[connIdent]{}) {
		id.cert = b.ident.Value().cert
	}
	b.ident, b.last = unique.Make(id), unixnano.Of(x.RequestAt)
	e.idents[x.ClientAddr] = b
}

// owns reports whether a connection from addr with clientID belongs to
// member m of g: the same host and client id, and no other member of the
// group the timeline knows, not gone, shares both (then nothing is
// attributed).
func (e *Engine) owns(g *groupState, m timeline.MemberFacts, addr, clientID string) bool {
	if m.ClientID != clientID || host(m.ClientAddr) != host(addr) {
		return false
	}
	for o := range e.tl.Members(g.id) {
		if o.MemberID != m.MemberID && !o.Gone && o.ClientID == clientID && host(o.ClientAddr) == host(addr) {
			return false
		}
	}
	return true
}

// ownedBy is owns for member id of g; false when the timeline knows
// nothing of it.
func (e *Engine) ownedBy(g *groupState, id, addr, clientID string) bool {
	m, ok := e.tl.Member(g.id, id)
	return ok && e.owns(g, m, addr, clientID)
}

// lastFetch is member id's latest fetch position for k at or before at,
// over the connections attributed to it.
func (e *Engine) lastFetch(g *groupState, id string, k tp, at time.Time) (fetchPos, bool) {
	var best fetchPos
	found := false
	for _, c := range e.connsOf(g, id) {
		p, ok := c.fetches[k]
		if !ok || p.at.After(at) {
			continue
		}
		if !found || p.at.After(best.at) {
			best, found = p, true
		}
	}
	return best, found
}

// assigned records the handovers member m's assignment of generation
// gen, answered at at, makes: the partitions someone else owned before it
// (timeline.Engine.OwnerBefore) whose previous owner's fetch position is
// known; a handover without one can make no duplicate_window and is not
// kept.
func (e *Engine) assigned(g *groupState, id string, at time.Time, gen int32, parts []decode.TopicPartitions) {
	for _, t := range parts {
		for _, p := range t.Partitions {
			k := tp{e.tl.TopicName(t.Topic, t.TopicID), p}
			prev := e.tl.OwnerBefore(g.id, gen, id, k.topic, k.partition)
			if prev == "" || prev == id {
				continue
			}
			pos, known := e.lastFetch(g, prev, k, at)
			if !known {
				// Without the previous owner's position there is no
				// window: nothing to keep, but the group is looked at
				// again as after any handover.
				e.mark(g)
				continue
			}
			h := &handover{g: g, at: at, generation: gen, k: k, from: prev, to: id, fromPos: pos}
			g.handovers = append(g.handovers, h)
			e.open[k] = append(e.open[k], h)
		}
	}
}

// offsetFetch takes an OffsetFetch response as where its member resumes.
func (e *Engine) offsetFetch(g *groupState, ev *decode.Event) {
	if !ev.Responded() {
		return
	}
	for _, t := range ev.OffsetFetch.Offsets {
		name := e.tl.TopicName(t.Topic, t.TopicID)
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Offset >= 0 {
				e.resumed(ev.ClientAddr, ev.ClientID, tp{name, p.Partition}, p.Offset, ev.At)
			}
		}
	}
}

// resumed settles the open handovers of k whose new owner a request from
// addr belongs to: its offset is where that owner resumed.
func (e *Engine) resumed(addr, clientID string, k tp, offset int64, at time.Time) {
	open := e.open[k]
	if len(open) == 0 {
		return
	}
	open = slices.DeleteFunc(open, func(h *handover) bool {
		if at.Before(h.at) {
			return false
		}
		g := h.g
		if g.byAddr[addr] == h.to || e.ownedBy(g, h.to, addr, clientID) {
			h.resume, h.resumed = offset, true
			e.mark(g)
			return true
		}
		return false
	})
	if len(open) == 0 {
		delete(e.open, k)
	} else {
		e.open[k] = open
	}
}

// duplicateWindows makes one finding per generation and pair of owners
// whose handovers re-process records.
func (e *Engine) duplicateWindows(g *groupState) []Finding {
	type key struct {
		gen      int32
		from, to string
	}
	// window is one finding's handovers, counted before its evidence is
	// written.
	type window struct {
		f       Finding
		records int64
		parts   map[string]any
	}
	byKey := map[key]*window{}
	var order []key
	for _, h := range g.handovers {
		if !h.resumed || h.fromPos.offset <= h.resume {
			continue
		}
		k := key{h.generation, h.from, h.to}
		w := byKey[k]
		if w == nil {
			w = &window{f: newFinding(DuplicateWindow, g.id, Critical, h.at, h.from), parts: map[string]any{}}
			w.f.Members = e.infos(g, h.from, h.to)
			byKey[k] = w
			order = append(order, k)
		}
		n := h.fromPos.offset - h.resume
		w.records += n
		w.parts[fmt.Sprintf("%s[%d]", h.k.topic, h.k.partition)] = map[string]any{
			"previousOwnerPosition": h.fromPos.offset, "previousOwnerLastFetchAt": stamp(h.fromPos.at),
			"resumedAt": h.resume, "records": n}
		w.f.Partitions[h.k.topic] = append(w.f.Partitions[h.k.topic], h.k.partition)
	}
	out := make([]Finding, 0, len(order))
	for _, k := range order {
		w := byKey[k]
		f := w.f
		f.Evidence["generation"] = k.gen
		f.Evidence["records"] = w.records
		f.Evidence["byPartition"] = w.parts
		f.Explanation = fmt.Sprintf("at the handover of generation %d, %s had read %d records past the last committed offsets of the partitions it gave to %s: %s resumed from the committed offsets and processes those records again",
			k.gen, k.from, w.records, k.to, k.to)
		f.Suggestion = advice(DuplicateWindow)
		if m := g.members[k.from]; m != nil && m.transactional {
			// Exactly-once: what the previous owner processed past its
			// committed offsets was in a transaction that never
			// committed them, so its output is aborted with it (fenced
			// or aborted on revocation). The records are processed
			// again; nothing reaches a read_committed reader twice.
			f.Severity = Info
			f.Evidence["transactional"] = true
			f.Explanation += ". " + k.from + " commits its offsets in its transactions (exactly-once): the output of those records was in a transaction that did not commit them and is discarded with it, so they are processed again but not written twice"
			f.Suggestion = "Nothing to fix for correctness. To process less again, commit the transaction on revocation (Java: the ConsumerRebalanceListener's onPartitionsRevoked, or Kafka Streams' exactly_once_v2 does it) and keep transactions short (commit.interval.ms for Streams)."
		}
		out = append(out, f)
	}
	return out
}
