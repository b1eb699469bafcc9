package timeline

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/unixnano"
)

// recentKeep is how long a commit not yet tied to a rebalance is kept: a
// rebalance can be learned after it started (a held JoinGroup is seen only
// when answered), and commits made since its start still belong to it.
const recentKeep = time.Minute

// recentMax bounds the commits kept per group for that purpose.
const recentMax = 4096

// commit is one OffsetCommit or TxnOffsetCommit exchange of a group
// member. A group keeps its commits up to a minute (see remember), and a
// generation those made during its revocation, so the fields are ordered
// to make it 72 bytes, its time is in Unix nanoseconds (see unixnano), and
// what few commits have is behind one pointer (TestMemberSize).
type commit struct {
	member string
	atNs   int64 // the request time
	// parts are the partitions committed, by topic then partition, each
	// once (see newCommit).
	parts   []commitPart
	latency time.Duration
	// rare is what few commits have, nil for most: see txn and epochs.
	rare       *commitRare
	generation int32
	responded  bool
	failed     bool
}

// commitRare is what few commits have. A commit's copies share it, as they
// share its parts; setTxn and setEpochs make a new one.
type commitRare struct {
	// txn is the transaction of a TxnOffsetCommit, nil for an
	// OffsetCommit (see txn.go).
	txn *txnCommit
	// epochs is set for a KIP-848 commit at an epoch other than its
	// member's (see epochs.go).
	epochs *epochCheck
}

// at is c's request time.
func (c *commit) at() time.Time { return unixnano.Time(c.atNs) }

// simple reports whether c is a simple commit, not a group member's: it
// names no member or no generation, so no rebalance or epoch can claim it.
func (c *commit) simple() bool { return c.member == "" || c.generation < 0 }

// txn is the transaction of a TxnOffsetCommit, nil for an OffsetCommit.
func (c *commit) txn() *txnCommit {
	if c.rare == nil {
		return nil
	}
	return c.rare.txn
}

// epochs is the epoch check of a KIP-848 commit at an epoch other than its
// member's, nil for any other commit.
func (c *commit) epochs() *epochCheck {
	if c.rare == nil {
		return nil
	}
	return c.rare.epochs
}

// setTxn sets c's transaction.
func (c *commit) setTxn(t *txnCommit) {
	var r commitRare
	if c.rare != nil {
		r = *c.rare
	}
	r.txn = t
	c.rare = &r
}

// setEpochs sets c's epoch check.
func (c *commit) setEpochs(ec *epochCheck) {
	var r commitRare
	if c.rare != nil {
		r = *c.rare
	}
	r.epochs = ec
	c.rare = &r
}

// commitPart is one partition of a commit: the offset committed and, when
// the commit of it failed, the error code (0 when it succeeded). Its topic
// is the group's record of it (group.commitTopic), which names it: a
// group keeps its commits during revocation with its generations, and a
// pointer makes a part 24 bytes where a name made it 32.
type commitPart struct {
	topic     *commitTopic
	offset    int64
	partition int32
	code      int16
}

// byTopic yields each topic of c with its parts: c's parts are sorted by
// topic, so that what a commit's handlers look up by topic is looked up
// once per topic, not once per partition.
func (c *commit) byTopic() iter.Seq2[*commitTopic, []commitPart] {
	return func(yield func(*commitTopic, []commitPart) bool) {
		for parts := c.parts; len(parts) > 0; {
			n := 1
			for n < len(parts) && parts[n].topic == parts[0].topic {
				n++
			}
			if !yield(parts[0].topic, parts[:n]) {
				return
			}
			parts = parts[n:]
		}
	}
}

// commitOffsets is c's offsets by topic and partition.
func commitOffsets(c *commit) map[string]map[int32]int64 {
	m := map[string]map[int32]int64{}
	for _, p := range c.parts {
		if m[p.topic.name] == nil {
			m[p.topic.name] = map[int32]int64{}
		}
		m[p.topic.name][p.partition] = p.offset
	}
	return m
}

// commitErrors is c's error names by topic and partition, nil when every
// partition succeeded.
func commitErrors(c *commit) map[string]map[int32]string {
	var m map[string]map[int32]string
	for _, p := range c.parts {
		if p.code == 0 {
			continue
		}
		if m == nil {
			m = map[string]map[int32]string{}
		}
		if m[p.topic.name] == nil {
			m[p.topic.name] = map[int32]string{}
		}
		m[p.topic.name][p.partition] = errorName(p.code)
	}
	return m
}

// commitTopic is what the group's commits and offset fetches say of one
// topic: its name, and the last offset committed successfully for each
// partition.
type commitTopic struct {
	name string
	// committed is by partition number for the partitions below
	// denseParts (every real one: a topic has at most a few thousand);
	// sparse holds any other number a client sends.
	committed []committedOffset
	sparse    map[int32]committedOffset
}

// denseParts bounds the partition numbers commitTopic.committed indexes.
const denseParts = 1 << 14

// committedOffset is the last offset committed successfully for a
// partition, and by whom.
type committedOffset struct {
	offset int64
	member string
	known  bool // false: nothing committed (an unused slot of committed)
}

// lastCommitted is the last offset committed successfully for partition
// p, if known. A nil commitTopic, a topic nothing was committed to, knows
// none.
func (t *commitTopic) lastCommitted(p int32) (committedOffset, bool) {
	if t == nil {
		return committedOffset{}, false
	}
	if p < 0 || p >= denseParts {
		co, ok := t.sparse[p]
		return co, ok
	}
	if int(p) < len(t.committed) && t.committed[p].known {
		return t.committed[p], true
	}
	return committedOffset{}, false
}

// setCommitted records offset, committed by member ("" when unknown), as
// the last offset committed for partition p. A dense slot is written field
// by field in place: this runs for every partition of every commit, and
// building a committedOffset to copy whole costs more.
func (t *commitTopic) setCommitted(p int32, offset int64, member string) {
	if p < 0 || p >= denseParts {
		if t.sparse == nil {
			t.sparse = map[int32]committedOffset{}
		}
		t.sparse[p] = committedOffset{offset: offset, member: member, known: true}
		return
	}
	for len(t.committed) <= int(p) {
		t.committed = append(t.committed, committedOffset{})
	}
	co := &t.committed[p]
	co.offset, co.member, co.known = offset, member, true
}

// commitTopic is what was committed to topic, added when new.
func (g *group) commitTopic(topic string) *commitTopic {
	ct := g.commitTopics[topic]
	if ct == nil {
		if g.commitTopics == nil {
			g.commitTopics = map[string]*commitTopic{}
		}
		ct = &commitTopic{name: topic}
		g.commitTopics[topic] = ct
	}
	return ct
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

// newCommit reads an OffsetCommit or TxnOffsetCommit event. A partition
// listed twice (or under two topic ids that name the same topic) is kept
// once: with the offset listed last, and the error listed last, if any
// failed. lm is the member's registry entry (see Engine.lookup).
func (g *group) newCommit(ev *decode.Event, lm *liveMember) commit {
	c := commit{atNs: unixnano.Of(ev.At), latency: ev.Latency(), responded: ev.Responded()}
	var topics []decode.CommitTopic
	if oc := ev.OffsetCommit; oc != nil {
		c.member, c.generation, topics = oc.MemberID, oc.Generation, oc.Topics
	} else {
		tc := ev.TxnOffsetCommit
		c.member, c.generation, topics = tc.MemberID, tc.Generation, tc.Topics
		c.setTxn(&txnCommit{key: txnKey{tc.TransactionalID, tc.ProducerID, tc.ProducerEpoch}, outcome: TxnPending})
	}
	// A commit is kept up to a minute (remember): it shares the registry's
	// copy of its member id rather than keeping the event's.
	if lm != nil {
		c.member = lm.id
	}
	n := 0
	for _, t := range topics {
		n += len(t.Partitions)
	}
	c.parts = make([]commitPart, 0, n)
	for _, t := range topics {
		if len(t.Partitions) == 0 {
			continue
		}
		topic := g.commitTopic(g.e.topics.topic(t.Topic, t.TopicID)) // v10 names topics by id
		for _, p := range t.Partitions {
			cp := commitPart{topic: topic, partition: p.Partition, offset: p.Offset, code: p.ErrorCode}
			if p.ErrorCode != 0 {
				c.failed = true
			}
			c.parts = append(c.parts, cp)
		}
	}
	c.parts = mergeParts(c.parts)
	return c
}

// mergeParts sorts parts by topic name and partition (stably: decode sorts
// them already, so this is usually only a check) and merges the entries of
// one partition into the last, keeping the last error listed.
func mergeParts(parts []commitPart) []commitPart {
	if inOrder(parts) {
		return parts // nothing to sort or merge: the common case, checked without calls
	}
	cmpPart := func(a, b commitPart) int {
		if c := strings.Compare(a.topic.name, b.topic.name); c != 0 {
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

// inOrder reports whether parts are sorted by topic name and partition,
// each partition once.
func inOrder(parts []commitPart) bool {
	for i := 1; i < len(parts); i++ {
		a, b := &parts[i-1], &parts[i]
		if a.topic == b.topic {
			if a.partition >= b.partition {
				return false
			}
		} else if a.topic.name > b.topic.name {
			return false
		}
	}
	return true
}

// offsetCommit handles an OffsetCommit (key 8) or TxnOffsetCommit (key
// 28) exchange: commits during a rebalance, failed commits, and suspect
// commits. A transactional commit's offsets and suspects wait for its
// transaction's end (see txn.go). lm is the member's registry entry (see
// Engine.lookup). It reports whether all it changed that a sweep depends
// on was a known member's last accepted request (see Engine.quiet):
// commits do not change membership.
func (g *group) offsetCommit(ev *decode.Event, lm *liveMember) (onlyAlive bool) {
	cv := g.newCommit(ev, lm)
	c := &cv
	if len(c.parts) == 0 {
		return true
	}
	g.checkEpoch(c)
	onlyAlive = true
	// A TxnOffsetCommit does not tell that the member is alive: the
	// coordinator does not count it as a heartbeat.
	if c.responded && !c.failed && c.member != "" && c.txn() == nil {
		lm, onlyAlive = g.aliveMember(lm, c.member, ev)
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
		if c.txn() != nil {
			c.txn().told = true
		}
		g.emitCommit(c.generation, "commit", c, false)
		g.remember(c)
	case c.epochs() != nil && c.responded:
		// Taken at an epoch not the member's: told, with why.
		if c.txn() != nil {
			c.txn().told = true
		}
		g.emitCommit(c.generation, "commit", c, false)
		g.remember(c)
	default:
		g.remember(c)
	}
	g.checkSuspects(c, lm, gen)
	if c.txn() != nil {
		if c.pending() {
			g.e.pendTxn(g, c)
		}
		return onlyAlive
	}
	if c.responded {
		g.setCommitted(c)
	}
	return onlyAlive
}

// pending reports whether some partition of c, a transactional commit,
// waits for its transaction's end: one that did not fail (or whose
// result is unknown).
func (c *commit) pending() bool {
	for _, p := range c.parts {
		if p.code == 0 {
			return true
		}
	}
	return false
}

// setCommitted records the partitions of c that succeeded as the last
// committed offsets.
func (g *group) setCommitted(c *commit) {
	for ct, parts := range c.byTopic() {
		for _, p := range parts {
			if p.code == 0 {
				ct.setCommitted(p.partition, p.offset, c.member)
			}
		}
	}
}

// revocationGen is the rebalance c was made during, if any: between the
// start of the rebalance and the member's own SyncGroup response.
func (g *group) revocationGen(c *commit) *generation {
	if c.simple() {
		return nil
	}
	if n := g.next; n != nil && !c.at().Before(n.start) {
		return n
	}
	if latest := g.latest(); latest != nil && (latest.phase == phaseJoining || latest.phase == phaseSyncing) && !c.at().Before(latest.start) {
		if m := latest.members[c.member]; m == nil || !m.synced || !c.at().After(m.syncedAt()) {
			return latest
		}
	}
	return nil
}

// attach records c as a commit during gen's revocation and tells it.
func (g *group) attach(gen *generation, c *commit) {
	if c.txn() != nil {
		c.txn().told = true
	}
	gen.commits = append(gen.commits, *c)
	g.emitCommit(gen.num, "commit during revocation", c, true)
}

// emitCommit tells c, a commit of generation gen (a commit during its
// revocation when during), its sentence starting with what.
func (g *group) emitCommit(gen int32, what string, c *commit, during bool) {
	fields := g.commitFields(c)
	facts := &CommitFacts{DuringRevocation: during, Responded: c.responded, Failed: c.failed}
	if during {
		fields["during_revocation"] = true
	}
	for _, cp := range c.parts {
		if name := errorName(cp.code); cp.code != 0 && !slices.Contains(facts.Errors, name) {
			facts.Errors = append(facts.Errors, name)
		}
	}
	slices.Sort(facts.Errors)
	g.e.emit(Entry{At: c.at(), Group: g.id, Kind: KindCommit, Generation: gen, Member: c.member,
		Text: g.commitText(what, c), Fields: fields, Commit: facts})
}

// commitQueue is a group's remembered commits, oldest first. Dropping the
// oldest only moves a start index; when the array is full, the live commits
// move back to its front if at least a third of it is dead, else to a new
// array half as large again as they need; and to such a new array too when
// they fill less than a third of it, as after a burst of commits (a
// rebalance) has passed. Keeping commits for a minute thus allocates only
// when the number live changes much (an array resliced from the front would
// be reallocated each time it fills), and each time the array fills it is
// brought within one and a half to three times the live commits; between
// two pushes that fill it, an array grown in a burst stays as it is.
type commitQueue struct {
	buf   []commit // buf[start:] are live; buf[:start] are zero
	start int
}

// live is the remembered commits, oldest first. The caller may change
// them in place, and keep a prefix (see keep).
func (q *commitQueue) live() []commit {
	return q.buf[q.start:]
}

// push remembers c, last.
func (q *commitQueue) push(c commit) {
	if len(q.buf) == cap(q.buf) {
		live := len(q.buf) - q.start
		if q.start > 0 && q.start >= live/2 && cap(q.buf) <= 3*live+12 {
			n := copy(q.buf, q.buf[q.start:])
			clear(q.buf[n:]) // the collector may free what the moved commits named
			q.buf, q.start = q.buf[:n], 0
		} else {
			buf := make([]commit, live, live+live/2+4)
			copy(buf, q.buf[q.start:])
			q.buf, q.start = buf, 0
		}
	}
	q.buf = append(q.buf, c)
}

// dropOldest forgets the oldest commit.
func (q *commitQueue) dropOldest() {
	q.buf[q.start] = commit{}
	q.start++
}

// keep forgets all but the first n live commits.
func (q *commitQueue) keep(n int) {
	clear(q.buf[q.start+n:])
	q.buf = q.buf[:q.start+n]
}

// remember keeps c for a while in case a rebalance that began before it is
// learned later (see attachRecent): a member's commit only, as a simple
// commit (no member, or no generation) is never tied to a rebalance. Any
// commit ages the older ones out.
func (g *group) remember(c *commit) {
	if !c.simple() {
		g.recent.push(*c)
	}
	for {
		live := g.recent.live()
		if len(live) == 0 || len(live) <= recentMax && g.e.now.Sub(live[0].at()) <= recentKeep {
			return
		}
		g.recent.dropOldest()
	}
}

// attachRecent ties remembered commits to gen when they fall in its
// revocation window.
func (g *group) attachRecent(gen *generation) {
	if gen.start.IsZero() {
		return
	}
	live := g.recent.live()
	kept := live[:0]
	for _, c := range live {
		if c.simple() || c.at().Before(gen.start) {
			kept = append(kept, c)
			continue
		}
		if m := gen.members[c.member]; m != nil && m.synced && c.at().After(m.syncedAt()) {
			kept = append(kept, c)
			continue
		}
		g.attach(gen, &c)
	}
	g.recent.keep(len(kept))
}

// refilterCommits returns to the remembered pool the commits attached to
// gen before its start was known to be later.
func (g *group) refilterCommits(gen *generation) {
	kept := gen.commits[:0]
	for _, c := range gen.commits {
		if c.at().Before(gen.start) {
			g.recent.push(c)
			continue
		}
		kept = append(kept, c)
	}
	gen.commits = kept
}

// memberOwned is what member id owned in gen, a classic generation kept
// by the group (nil: unknown), cached in lm, the member's registry entry
// (nil: none; see ownedCache). The cached set is the member's own:
// partitions sets are replaced, never changed in place.
//
// The cache is a speed shortcut for large groups that commit often, which
// BenchmarkSteadyState measures.
func (g *group) memberOwned(gen *generation, id string, lm *liveMember) partitions {
	if lm != nil {
		if owned, ok := lm.owned.get(gen); ok {
			return owned
		}
	}
	var owned partitions
	if m := gen.members[id]; m != nil {
		owned = m.resolved()
	} else if gen.frozen != nil {
		if m := frozenMemberIn(g.frozenBlock().members(gen), id); m != nil {
			owned = m.owned
		}
	}
	if lm != nil {
		lm.owned.set(gen, owned)
	}
	return owned
}

// checkSuspects flags partitions committed by a member that did not own
// them in the generation it named, and commits moving an offset backwards.
// lm is the member's registry entry (nil: none). A transactional commit's
// suspects are held until its transaction ends: they are told only if it
// commits (see txnEnded).
func (g *group) checkSuspects(c *commit, lm *liveMember, during *generation) {
	if !c.responded {
		return // nothing is flagged without the result
	}
	var owned partitions // nil: unknown
	var ownerGen *generation
	if g.consumer != nil {
		owned = g.consumerOwned(c.member)
	} else if c.generation >= 0 && c.member != "" {
		if ownerGen = g.numbered(c.generation); ownerGen != nil && !ownerGen.midway {
			owned = g.memberOwned(ownerGen, c.member, lm)
		}
	}
	var target *generation // where c's suspects are kept
	for committed, parts := range c.byTopic() {
		t := committed.name
		ownedParts := owned.of(t)
		for _, cp := range parts {
			if cp.code != 0 {
				continue
			}
			p := cp.partition
			s := suspect{member: c.member, at: c.at(), generation: c.generation, topic: t, partition: p, offset: cp.offset}
			if _, ok := slices.BinarySearch(ownedParts, p); owned != nil && !ok {
				s.reasons = append(s.reasons, SuspectNotOwned)
				s.owner = g.ownerOf(ownerGen, t, p)
			}
			if prev, ok := committed.lastCommitted(p); ok {
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
			if target == nil {
				target = g.suspectTarget(c, during) // once per commit, with its first suspect
			}
			if c.txn() != nil {
				c.txn().held, c.txn().heldIn = append(c.txn().held, s), target
				continue
			}
			g.tellSuspect(target, s)
		}
	}
}

// tellSuspect keeps s in target (nil: none) and tells it.
func (g *group) tellSuspect(target *generation, s suspect) {
	if target != nil {
		target.keepSuspect(s)
	}
	g.e.emit(Entry{At: s.at, Group: g.id, Kind: KindSuspectCommit, Generation: s.generation, Member: s.member,
		Text: suspectText(s), Fields: map[string]any{
			"topic": s.topic, "partition": s.partition, "offset": s.offset, "committed_offset": s.committed,
			"owner": s.owner, "reasons": s.reasons},
		Suspect: &SuspectFacts{Reasons: s.reasons}})
}

// maxSuspects is how many suspect commits a generation keeps: a stable
// generation may last for weeks while a faulty client commits offsets it
// no longer owns every second. Those beyond are counted (the report says
// how many) and still told as entries, so the log and the journal keep
// them all.
const maxSuspects = 100

// keepSuspect keeps s in gen, unless gen keeps maxSuspects already.
func (gen *generation) keepSuspect(s suspect) {
	if len(gen.suspects) >= maxSuspects {
		gen.suspectsDropped++
		return
	}
	gen.suspects = append(gen.suspects, s)
}

// suspectTarget is the generation a suspect of c belongs to: the one c
// named, whose ownership it contradicts; else the rebalance it was made
// during; else the latest.
func (g *group) suspectTarget(c *commit, during *generation) *generation {
	target := g.numbered(c.generation)
	if target == nil || g.consumer != nil {
		target = during
	}
	if target == nil {
		target = g.latest()
	}
	return target
}

// ownerOf is the partition's owner in gen, else in the latest generation.
func (g *group) ownerOf(gen *generation, t string, p int32) string {
	if g.consumer != nil {
		return g.consumerOwner(t, p)
	}
	if gen != nil {
		if o := g.ownerIn(gen, t, p); o != "" {
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
	if c.txn() != nil {
		b.WriteString(" in transaction ")
		writeTxn(&b, c.txn())
	}
	for i, cp := range c.parts[:min(len(c.parts), maxListed)] {
		b.WriteByte(' ')
		if i == 0 || cp.topic != c.parts[i-1].topic {
			b.WriteString(cp.topic.name)
		}
		writeOffset(&b, cp.partition, cp.offset)
	}
	writeMore(&b, len(c.parts)-maxListed)
	switch {
	case !c.responded:
		b.WriteString(" result unknown (no response seen)")
	case c.failed:
		b.WriteString(" FAILED")
		listed, failed := 0, 0
		for _, cp := range c.parts {
			if cp.code == 0 {
				continue
			}
			if failed++; listed < maxListed {
				fmt.Fprintf(&b, " %s[%d] %s", cp.topic.name, cp.partition, errorName(cp.code))
				listed++
			}
		}
		writeMore(&b, failed-listed)
		fmt.Fprintf(&b, " (%s): those offsets are lost; the next owner re-processes from the last good commit", human(c.latency))
		if c.txn() != nil && c.pending() {
			b.WriteString("; the others count only if the transaction commits")
		}
		b.WriteString(epochText(c))
		return b.String()
	default:
		b.WriteString(" ok")
	}
	fmt.Fprintf(&b, " (%s)", human(c.latency))
	if c.txn() != nil {
		b.WriteString(": counts only if the transaction commits")
	}
	b.WriteString(epochText(c))
	return b.String()
}

func (g *group) commitFields(c *commit) map[string]any {
	f := map[string]any{"offsets": commitOffsets(c), "latency_ms": ms(c.latency), "failed": c.failed, "commit_generation": c.generation}
	if errs := commitErrors(c); errs != nil {
		f["errors"] = errs
	}
	if c.txn() != nil {
		maps.Copy(f, g.txnFields(c))
	}
	epochFields(c, f)
	return f
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
		ct := g.commitTopics[topic] // nil until an offset is known
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.Offset < 0 {
				continue
			}
			if cur, ok := ct.lastCommitted(p.Partition); !ok || cur.offset != p.Offset {
				if ct == nil {
					ct = g.commitTopic(topic)
				}
				ct.setCommitted(p.Partition, p.Offset, "")
			}
		}
	}
}
