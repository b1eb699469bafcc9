package timeline

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// recentKeep is how long a commit not yet tied to a rebalance is kept: a
// rebalance can be learned after it started (a held JoinGroup is seen only
// when answered), and commits made since its start still belong to it.
const recentKeep = time.Minute

// recentMax bounds the commits kept per group for that purpose.
const recentMax = 4096

// commit is one OffsetCommit exchange of a group member.
type commit struct {
	member     string
	instanceID string
	at         time.Time
	generation int32
	// parts are the partitions committed, by topic then partition, each
	// once (see newCommit).
	parts     []commitPart
	latency   time.Duration
	responded bool
	failed    bool
	attached  bool
}

// commitPart is one partition of a commit: the offset committed and, when
// the commit of it failed, the error code (0 when it succeeded).
type commitPart struct {
	topic     string
	offset    int64
	partition int32
	code      int16
}

// offsets is the commit's offsets by topic and partition.
func (c *commit) offsets() map[string]map[int32]int64 {
	m := map[string]map[int32]int64{}
	for _, p := range c.parts {
		if m[p.topic] == nil {
			m[p.topic] = map[int32]int64{}
		}
		m[p.topic][p.partition] = p.offset
	}
	return m
}

// errors is the commit's error names by topic and partition, nil when
// every partition succeeded.
func (c *commit) errors() map[string]map[int32]string {
	var m map[string]map[int32]string
	for _, p := range c.parts {
		if p.code == 0 {
			continue
		}
		if m == nil {
			m = map[string]map[int32]string{}
		}
		if m[p.topic] == nil {
			m[p.topic] = map[int32]string{}
		}
		m[p.topic][p.partition] = errorName(p.code)
	}
	return m
}

// committedOffset is the last offset committed successfully for a
// partition, and by whom.
type committedOffset struct {
	offset int64
	member string
	at     time.Time
}

// suspect is a commit that can make the next owner re-process records.
type suspect struct {
	member         string
	at             time.Time
	generation     int32
	topic          string
	partition      int32
	offset         int64
	committed      int64
	committedKnown bool
	committedBy    string
	owner          string
	reasons        []string
}

// Suspect reasons.
const (
	SuspectNotOwned  = "not_owned"
	SuspectBackwards = "backwards"
)

// newCommit reads an OffsetCommit event. A partition listed twice (or
// under two topic ids that name the same topic) is kept once: with the
// offset listed last, and the error listed last, if any failed.
func (g *group) newCommit(ev *decode.Event) *commit {
	oc := ev.OffsetCommit
	c := &commit{member: oc.MemberID, instanceID: oc.InstanceID, at: ev.At, generation: oc.Generation,
		latency: ev.Latency(), responded: ev.Responded()}
	// A commit is kept up to a minute (remember): it shares the registry's
	// copies of its member's strings and the group's of its topic names
	// instead of keeping the event's, so the collector has fewer objects
	// to mark.
	if lm := g.live[c.member]; lm != nil {
		c.member = lm.id
		if lm.instanceID == c.instanceID {
			c.instanceID = lm.instanceID
		}
	}
	n := 0
	for _, t := range oc.Topics {
		n += len(t.Partitions)
	}
	c.parts = make([]commitPart, 0, n)
	for _, t := range oc.Topics {
		topic := g.commitTopic(g.e.topics.topic(t.Topic, t.TopicID)) // v10 names topics by id
		for _, p := range t.Partitions {
			cp := commitPart{topic: topic, partition: p.Partition, offset: p.Offset}
			if p.ErrorCode != 0 {
				cp.code = p.ErrorCode
				c.failed = true
			}
			c.parts = append(c.parts, cp)
		}
	}
	c.parts = mergeParts(c.parts)
	return c
}

// commitTopic returns the group's copy of topic name t, making t it when
// the group has none.
func (g *group) commitTopic(t string) string {
	if kept, ok := g.commitTopics[t]; ok {
		return kept
	}
	if g.commitTopics == nil {
		g.commitTopics = map[string]string{}
	}
	g.commitTopics[t] = t
	return t
}

// mergeParts sorts parts by topic and partition (stably: decode sorts
// them already, so this is usually only a check) and merges the entries of
// one partition into the last, keeping the last error listed.
func mergeParts(parts []commitPart) []commitPart {
	cmpPart := func(a, b commitPart) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return cmp.Compare(a.partition, b.partition)
	}
	if !slices.IsSortedFunc(parts, cmpPart) {
		slices.SortStableFunc(parts, cmpPart)
	}
	out := parts[:0]
	for _, p := range parts {
		if n := len(out); n > 0 && cmpPart(out[n-1], p) == 0 {
			if p.code == 0 {
				p.code = out[n-1].code
			}
			out[n-1] = p
			continue
		}
		out = append(out, p)
	}
	return out
}

// offsetCommit handles an OffsetCommit exchange (key 8): commits during a
// rebalance, failed commits, and suspect commits.
func (g *group) offsetCommit(ev *decode.Event) {
	c := g.newCommit(ev)
	if len(c.parts) == 0 {
		return
	}
	if c.responded && !c.failed {
		g.alive(c.member, ev)
	}
	var gen *generation
	if g.consumer != nil {
		gen = g.consumerRevocation(c)
	} else {
		gen = g.revocationGen(c)
	}
	switch {
	case gen != nil:
		g.attach(gen, c)
	case c.failed:
		g.emit(c.at, KindCommit, c.generation, c.member, g.commitText("commit", c), commitFields(c))
		g.remember(c)
	default:
		g.remember(c)
	}
	g.checkSuspects(c, gen)
	if !c.responded {
		return
	}
	var byPart map[int32]committedOffset // g.committed[topic]
	topic := ""
	for _, p := range c.parts {
		if p.code != 0 {
			continue
		}
		if byPart == nil || p.topic != topic {
			topic, byPart = p.topic, g.committed[p.topic]
			if byPart == nil {
				byPart = map[int32]committedOffset{}
				g.committed[p.topic] = byPart
			}
		}
		byPart[p.partition] = committedOffset{offset: p.offset, member: c.member, at: c.at}
	}
}

// revocationGen is the rebalance c was made during, if any: between the
// start of the rebalance and the member's own SyncGroup response.
func (g *group) revocationGen(c *commit) *generation {
	if c.member == "" || c.generation < 0 {
		return nil // a simple commit, not a group member's
	}
	if n := g.next; n != nil && !c.at.Before(n.start) {
		return n
	}
	if latest := g.latest(); latest != nil && (latest.phase == phaseJoining || latest.phase == phaseSyncing) && !c.at.Before(latest.start) {
		if m := latest.members[c.member]; m == nil || !m.synced || !c.at.After(m.syncedAt) {
			return latest
		}
	}
	return nil
}

// attach records c as a commit during gen's revocation and tells it.
func (g *group) attach(gen *generation, c *commit) {
	c.attached = true
	gen.commits = append(gen.commits, c)
	g.emit(c.at, KindCommit, gen.num, c.member, g.commitText("commit during revocation", c), commitFields(c))
}

// remember keeps c for a while in case a rebalance that began before it is
// learned later.
func (g *group) remember(c *commit) {
	g.recent = append(g.recent, c)
	cut := 0
	for cut < len(g.recent) && (len(g.recent)-cut > recentMax || g.e.now.Sub(g.recent[cut].at) > recentKeep) {
		cut++
	}
	// Reslicing drops from the front without copying; append copies only
	// the live part when it grows the array.
	g.recent = g.recent[cut:]
}

// attachRecent ties remembered commits to gen when they fall in its
// revocation window.
func (g *group) attachRecent(gen *generation) {
	if gen.start.IsZero() {
		return
	}
	kept := g.recent[:0]
	for _, c := range g.recent {
		if c.attached || c.member == "" || c.generation < 0 || c.at.Before(gen.start) {
			kept = append(kept, c)
			continue
		}
		if m := gen.members[c.member]; m != nil && m.synced && c.at.After(m.syncedAt) {
			kept = append(kept, c)
			continue
		}
		g.attach(gen, c)
	}
	g.recent = kept
}

// refilterCommits returns to the remembered pool the commits attached to
// gen before its start was known to be later.
func (g *group) refilterCommits(gen *generation) {
	kept := gen.commits[:0]
	for _, c := range gen.commits {
		if c.at.Before(gen.start) {
			c.attached = false
			g.recent = append(g.recent, c)
			continue
		}
		kept = append(kept, c)
	}
	gen.commits = kept
}

// checkSuspects flags partitions committed by a member that did not own
// them in the generation it named, and commits moving an offset backwards.
func (g *group) checkSuspects(c *commit, during *generation) {
	var owned partitions
	var ownerGen *generation
	if g.consumer != nil {
		owned = g.consumerOwned(c.member)
	} else if c.generation >= 0 && c.member != "" {
		if ownerGen = g.byNum[c.generation]; ownerGen != nil && !ownerGen.midway {
			if m := ownerGen.members[c.member]; m != nil {
				owned = m.resolved()
			}
		}
	}
	// A suspect belongs to the generation the commit named, whose
	// ownership it contradicts; else to the rebalance it was made in.
	target := g.byNum[c.generation]
	if target == nil || g.consumer != nil {
		target = during
	}
	if target == nil {
		target = g.latest()
	}
	if !g.anySuspect(c, owned) {
		return // the common case, without sorting the partitions
	}
	for _, cp := range c.parts {
		t, p := cp.topic, cp.partition
		{
			if !c.responded || cp.code != 0 {
				continue
			}
			s := suspect{member: c.member, at: c.at, generation: c.generation, topic: t, partition: p, offset: cp.offset}
			if owned != nil && !owned.has(t, p) {
				s.reasons = append(s.reasons, SuspectNotOwned)
				s.owner = g.ownerOf(ownerGen, t, p)
			}
			if prev, ok := g.committed[t][p]; ok {
				s.committed, s.committedKnown, s.committedBy = prev.offset, true, prev.member
				if s.offset < prev.offset {
					s.reasons = append(s.reasons, SuspectBackwards)
					if s.owner == "" {
						s.owner = g.ownerOf(ownerGen, t, p)
					}
				}
			}
			if len(s.reasons) == 0 {
				continue
			}
			if target != nil {
				target.suspects = append(target.suspects, s)
			}
			g.emit(c.at, KindSuspectCommit, s.generation, c.member, suspectText(s), map[string]any{
				"topic": t, "partition": p, "offset": s.offset, "committed_offset": s.committed,
				"owner": s.owner, "reasons": s.reasons})
		}
	}
}

// anySuspect reports whether checkSuspects would flag any partition of c,
// given what the member owned (nil: unknown).
func (g *group) anySuspect(c *commit, owned partitions) bool {
	if !c.responded {
		return false
	}
	var ownedParts []int32                  // owned partitions of the topic of the last part
	var committed map[int32]committedOffset // of the topic of the last part
	for i, cp := range c.parts {
		if i == 0 || cp.topic != c.parts[i-1].topic {
			ownedParts, committed = owned[cp.topic], g.committed[cp.topic]
		}
		if cp.code != 0 {
			continue
		}
		if owned != nil {
			if _, ok := slices.BinarySearch(ownedParts, cp.partition); !ok {
				return true
			}
		}
		if prev, ok := committed[cp.partition]; ok && cp.offset < prev.offset {
			return true
		}
	}
	return false
}

// ownerOf is the partition's owner in gen, else in the latest generation.
func (g *group) ownerOf(gen *generation, t string, p int32) string {
	if g.consumer != nil {
		return g.consumerOwner(t, p)
	}
	if gen != nil {
		if o := gen.ownerOf(t, p); o != "" {
			return o
		}
	}
	if latest := g.latest(); latest != nil {
		return latest.ownerOf(t, p)
	}
	return ""
}

func suspectText(s suspect) string {
	var why []string
	for _, r := range s.reasons {
		switch r {
		case SuspectNotOwned:
			o := s.owner
			if o == "" {
				o = "none known"
			}
			why = append(why, fmt.Sprintf("not owned by %s in generation %d (owner %s)", s.member, s.generation, o))
		case SuspectBackwards:
			why = append(why, fmt.Sprintf("moves the committed offset back from %d (committed by %s) to %d: %d records will be re-processed",
				s.committed, s.committedBy, s.offset, s.committed-s.offset))
		}
	}
	return fmt.Sprintf("suspect commit by %s %s[%d]=%d: %s", s.member, s.topic, s.partition, s.offset, strings.Join(why, "; "))
}

// commitText renders "commit during revocation A t[0]=12 [1]=9 ok (3 ms)".
func (g *group) commitText(head string, c *commit) string {
	var b strings.Builder
	b.WriteString(head)
	b.WriteByte(' ')
	b.WriteString(c.member)
	if c.member == "" {
		b.WriteString("(no member)")
	}
	fmt.Fprintf(&b, " gen %d", c.generation)
	for i, cp := range c.parts {
		b.WriteByte(' ')
		if i == 0 || cp.topic != c.parts[i-1].topic {
			b.WriteString(cp.topic)
		}
		fmt.Fprintf(&b, "[%d]=%d", cp.partition, cp.offset)
	}
	switch {
	case !c.responded:
		b.WriteString(" result unknown (no response seen)")
	case c.failed:
		b.WriteString(" FAILED")
		for _, cp := range c.parts {
			if cp.code != 0 {
				fmt.Fprintf(&b, " %s[%d] %s", cp.topic, cp.partition, errorName(cp.code))
			}
		}
		fmt.Fprintf(&b, " (%s): those offsets are lost; the next owner re-processes from the last good commit", human(c.latency))
		return b.String()
	default:
		b.WriteString(" ok")
	}
	fmt.Fprintf(&b, " (%s)", human(c.latency))
	return b.String()
}

func commitFields(c *commit) map[string]any {
	f := map[string]any{"offsets": c.offsets(), "latency_ms": ms(c.latency), "failed": c.failed, "commit_generation": c.generation}
	if errs := c.errors(); errs != nil {
		f["errors"] = errs
	}
	return f
}

func (g *group) setCommitted(t string, p int32, c committedOffset) {
	if g.committed[t] == nil {
		g.committed[t] = map[int32]committedOffset{}
	}
	g.committed[t][p] = c
}

// offsetFetch handles an OffsetFetch exchange (key 9): what is committed,
// as the coordinator answers it, for the backwards check.
func (g *group) offsetFetch(ev *decode.Event) {
	of := ev.OffsetFetch
	if !ev.Responded() || of.ErrorCode != 0 {
		return
	}
	for _, t := range of.Offsets {
		topic := g.e.topics.topic(t.Topic, t.TopicID)
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Offset >= 0 {
				if cur, ok := g.committed[topic][p.Partition]; !ok || cur.offset != p.Offset {
					g.setCommitted(topic, p.Partition, committedOffset{offset: p.Offset, at: ev.At})
				}
			}
		}
	}
}
