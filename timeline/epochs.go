package timeline

import (
	"fmt"
	"strings"
)

// KIP-848 commits at an epoch that is not the member's. An OffsetCommit
// (v9+) or TxnOffsetCommit (v3+) of a consumer-protocol member carries its
// member epoch. Before Kafka 4.3 the coordinator took a commit only at the
// member's current epoch, and refused any other with STALE_MEMBER_EPOCH.
// KIP-1251 (Kafka 4.3) keeps, per member and partition, the assignment
// epoch: the member epoch at which the partition was assigned to it. A
// commit at an older epoch E passes for a partition whose assignment epoch
// is at most E, and fails for one assigned later, or not assigned to the
// member at all (moved to another member: the zombie commit the member
// epoch fences). The KIP speaks of the check per partition, but Kafka
// 4.4.0's coordinator (OffsetMetadataManager.commitOffset) runs it inside
// the request: the first partition that fails it fails the whole
// OffsetCommit, every partition answered STALE_MEMBER_EPOCH, the ones the
// member held since E included (a TxnOffsetCommit likewise, with
// STALE_MEMBER_EPOCH from v6, ILLEGAL_GENERATION before). A commit at an
// epoch newer than the member's is refused either way.
//
// Nothing of this is on the wire beyond the commit's epoch and each
// partition's result: kproxy tells such a commit with the member's epoch
// and each partition's assignment epoch as the member's own heartbeats
// showed them, next to what the coordinator answered.

// epochCheck is how a KIP-848 commit's epoch compares with its member's.
type epochCheck struct {
	// memberEpoch is the member's epoch as its heartbeats last showed it.
	memberEpoch int32
	// assigned is each part's assignment epoch (in the order of the
	// commit's parts): the epoch since which the member holds it, -1
	// when it does not; nil when the commit's epoch is newer.
	assigned []int32
}

// checkEpoch sets c's epoch check when c, a commit of a KIP-848 consumer group's
// member, names an epoch other than the member's.
func (g *group) checkEpoch(c *commit) {
	if g.consumer == nil || g.consumer.share != nil || c.simple() {
		return
	}
	cm := g.consumer.members[c.member]
	if cm == nil || cm.epoch <= 0 || cm.epoch == c.generation {
		return
	}
	ec := &epochCheck{memberEpoch: cm.epoch}
	if c.generation < cm.epoch {
		ec.assigned = make([]int32, len(c.parts))
		for i, cp := range c.parts {
			ec.assigned[i] = g.assignmentEpoch(cm, cp.topic.name, cp.partition)
		}
	}
	c.setEpochs(ec)
}

// assignmentEpoch is the member epoch since which cm holds the partition
// (assigned, or still being revoked), from its epoch history; -1 when it
// does not hold it.
func (g *group) assignmentEpoch(cm *cmember, topic string, p int32) int32 {
	n := len(cm.steps)
	if n == 0 {
		return -1
	}
	holds := func(i int) bool { return g.e.topics.named(cm.steps[i].assigned).has(topic, p) }
	last := n - 1
	if !holds(last) {
		// Revoked in the latest step but not yet released: held since
		// the steps before.
		if !g.e.topics.named(cm.revoking).has(topic, p) {
			return -1
		}
		last--
	}
	if last < 0 || !holds(last) {
		return -1
	}
	first := last
	for first > 0 && holds(first-1) {
		first--
	}
	return cm.steps[first].epoch
}

// epochText explains c's epoch: "; epoch 3 behind the member's 4 (t[0]
// assigned to it at epoch 3, t[1] not assigned to it)", then what the
// coordinator made of it. "" when c has no epoch check.
func epochText(c *commit) string {
	ec := c.epochs()
	if ec == nil {
		return ""
	}
	var b strings.Builder
	if ec.assigned == nil {
		fmt.Fprintf(&b, "; epoch %d ahead of the member's %d", c.generation, ec.memberEpoch)
		return b.String()
	}
	fmt.Fprintf(&b, "; epoch %d behind the member's %d (", c.generation, ec.memberEpoch)
	for i, cp := range c.parts[:min(len(c.parts), maxListed)] {
		if i > 0 {
			b.WriteString(", ")
		}
		if a := ec.assigned[i]; a < 0 {
			fmt.Fprintf(&b, "%s[%d] not assigned to it", cp.topic.name, cp.partition)
		} else {
			fmt.Fprintf(&b, "%s[%d] assigned at epoch %d", cp.topic.name, cp.partition, a)
		}
	}
	writeMore(&b, len(c.parts)-maxListed)
	b.WriteByte(')')
	// held: parts the member held since the commit's epoch or before;
	// taken: those the coordinator took; later: the other parts, refused.
	held, taken, later := 0, 0, 0
	for i, cp := range c.parts {
		a := ec.assigned[i]
		passes := a >= 0 && a <= c.generation
		switch {
		case passes && cp.code == 0:
			held++
			taken++
		case passes:
			held++
		case epochRefusal(c, cp.code):
			later++
		}
	}
	if !c.responded {
		return b.String()
	}
	refused := refusedForEpoch(c)
	switch {
	case taken > 0 && later > 0:
		b.WriteString(": the coordinator took the partitions assigned at or before the commit's epoch and refused the others, as KIP-1251's assignment epochs (Kafka 4.3+) have it")
	case taken > 0:
		b.WriteString(": taken, as KIP-1251's assignment epochs (Kafka 4.3+) allow for partitions assigned at or before the commit's epoch")
	case later > 0 && later == len(c.parts):
		b.WriteString(": refused, the partitions being assigned to the member after the commit's epoch or not at all")
	case refused && held > 0 && held < len(c.parts):
		b.WriteString(": refused whole: a partition assigned to the member after the commit's epoch or not at all fails KIP-1251's check (Kafka 4.3+), and the coordinator then refuses every partition of the commit, those held since its epoch included")
	case refused && held == len(c.parts):
		b.WriteString(": refused, although by the member's heartbeats each was assigned at or before the commit's epoch: the coordinator held the commit to the member's current epoch, as before KIP-1251 (Kafka 4.3)")
	}
	return b.String()
}

// epochRefusal reports whether code is the coordinator refusing a
// partition of c for its epoch: STALE_MEMBER_EPOCH, or for a
// TxnOffsetCommit before v6, ILLEGAL_GENERATION.
func epochRefusal(c *commit, code int16) bool {
	return code == errStaleMemberEpoch || c.txn() != nil && code == errIllegalGeneration
}

// epochFields adds c's epoch check to an entry's fields.
func epochFields(c *commit, f map[string]any) {
	ec := c.epochs()
	if ec == nil {
		return
	}
	f["member_epoch"] = ec.memberEpoch
	if m := assignmentEpochs(c); m != nil {
		f["assignment_epochs"] = m
	}
}

// assignmentEpochs is topic → partition → assignment epoch of c's parts,
// nil without them.
func assignmentEpochs(c *commit) map[string]map[int32]int32 {
	if c.epochs() == nil || c.epochs().assigned == nil {
		return nil
	}
	m := map[string]map[int32]int32{}
	for i, cp := range c.parts {
		if m[cp.topic.name] == nil {
			m[cp.topic.name] = map[int32]int32{}
		}
		m[cp.topic.name][cp.partition] = c.epochs().assigned[i]
	}
	return m
}

// refusedForEpoch reports whether every partition of c was refused for
// its epoch (see epochRefusal).
func refusedForEpoch(c *commit) bool {
	for _, cp := range c.parts {
		if !epochRefusal(c, cp.code) {
			return false
		}
	}
	return len(c.parts) > 0
}
