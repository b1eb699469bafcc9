package diagnose

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// revocationErrors are the OffsetCommit and TxnOffsetCommit errors that
// mean the commit came from a generation (or member epoch) the
// coordinator no longer accepts: the offsets are lost, and the next owner
// starts from the last good one.
var revocationErrors = map[int16]bool{
	kerr.IllegalGeneration.Code:   true,
	kerr.UnknownMemberID.Code:     true,
	kerr.RebalanceInProgress.Code: true,
	kerr.FencedMemberEpoch.Code:   true, // KIP-848
	kerr.StaleMemberEpoch.Code:    true, // KIP-848
	kerr.GroupIDNotFound.Code:     true, // TxnOffsetCommit v6+ (KIP-1319): ILLEGAL_GENERATION before
}

// offsetCommit makes a failed_revocation_commit finding for a commit
// refused because of a rebalance, OffsetCommit or TxnOffsetCommit. The
// records processed again are counted from the partitions' last committed
// offsets as the timeline knows them (a transactional commit's count once
// its transaction committed).
func (e *Engine) offsetCommit(g *groupState, ev *decode.Event, touch func(string) *memberState) {
	member, generation, topics := commitOf(ev)
	ms := touch(member)
	txn := ev.TxnOffsetCommit
	if ms != nil && txn != nil {
		ms.transactional = true
	}
	if !ev.Responded() {
		return
	}
	var failed map[tp]bool // made at the first refused partition: most commits succeed
	var errs map[string]int
	var lost, records int64
	for _, t := range topics {
		name := e.tl.TopicName(t.Topic, t.TopicID)
		for _, p := range t.Partitions {
			k := tp{name, p.Partition}
			switch {
			case revocationErrors[p.ErrorCode]:
				if failed == nil {
					failed, errs = map[tp]bool{}, map[string]int{}
				}
				failed[k] = true
				errs[decode.ErrorName(p.ErrorCode)]++
				lost++
				if c, ok := e.tl.Committed(g.id, name, p.Partition); ok && p.Offset > c {
					records += p.Offset - c
				}
			}
		}
	}
	if len(failed) == 0 {
		return
	}
	f := newFinding(FailedRevocationCommit, g.id, Critical, ev.At, member)
	m := e.info(g, member)
	m.ClientID, m.ClientAddr = ev.ClientID, ev.ClientAddr
	f.Members = []Member{m}
	f.Partitions = partitionsMap(failed)
	f.Evidence["generation"] = generation
	f.Evidence["errors"] = errs
	f.Evidence["partitionsLost"] = lost
	f.Evidence["recordsProcessedAgain"] = records
	if g.rebalancing {
		f.Evidence["rebalanceStartedAt"] = stamp(g.rebalanceStart)
	}
	names := make([]string, 0, len(errs))
	for _, k := range sortedKeys(errs) {
		names = append(names, k)
	}
	what := "this commit"
	if txn != nil {
		f.Evidence["transactionalId"] = txn.TransactionalID
		f.Evidence["producerId"] = txn.ProducerID
		f.Evidence["producerEpoch"] = txn.ProducerEpoch
		what = fmt.Sprintf("this transactional commit (transaction %s, producer %d epoch %d)", txn.TransactionalID, txn.ProducerID, txn.ProducerEpoch)
	}
	f.Explanation = fmt.Sprintf("%s of generation %d was refused (%s): the member committed after the group had moved on (it was slow to reach its revocation callback, or it had already been removed). Those offsets are lost; the next owner of the partitions resumes from the last good commit and processes again the records after it (%d known)",
		what, generation, strings.Join(names, ", "), records)
	if errs[decode.ErrorName(kerr.StaleMemberEpoch.Code)] > 0 {
		f.Explanation += ". STALE_MEMBER_EPOCH (KIP-848): from Kafka 4.3 (KIP-1251, assignment epochs) the coordinator accepts a commit whose member epoch is at least the epoch at which the partition was assigned to the member and at most the member's current epoch, so a commit sent just before the member learned a new epoch still counts; this one named an epoch older than the partition's assignment to it, or a partition it no longer owns"
	}
	if txn != nil {
		f.Explanation += ". The producer must abort that transaction: its output is discarded with it, so nothing is written twice, but the records are processed again"
	}
	f.Suggestion = advice(FailedRevocationCommit)
	g.findings = append(g.findings, f)
}

// commitOf is the member, generation (KIP-848: member epoch) and topics
// of an OffsetCommit or TxnOffsetCommit event.
func commitOf(ev *decode.Event) (member string, generation int32, topics []decode.CommitTopic) {
	if oc := ev.OffsetCommit; oc != nil {
		return oc.MemberID, oc.Generation, oc.Topics
	}
	tc := ev.TxnOffsetCommit
	return tc.MemberID, tc.Generation, tc.Topics
}

// suspects turns the timeline's suspect commits into backwards_commit
// and stale_owner_commit findings.
func (e *Engine) suspects(g *groupState, gr *timeline.GroupView) []Finding {
	var out []Finding
	for _, gen := range gr.Generations {
		for _, s := range gen.Suspects {
			at := s.At
			part := map[tp]bool{{s.Topic, s.Partition}: true}
			for _, reason := range s.Reasons {
				switch reason {
				case timeline.SuspectBackwards:
					f := newFinding(BackwardsCommit, g.id, Critical, at, s.MemberID)
					f.Members = e.infos(g, s.MemberID)
					f.Partitions = partitionsMap(part)
					f.Evidence["generation"] = s.Generation
					f.Evidence["offset"] = s.Offset
					f.Evidence["committedBy"] = s.CommittedBy
					if s.CommittedKnown {
						f.Evidence["previousOffset"] = s.Committed
						f.Evidence["recordsProcessedAgain"] = s.Committed - s.Offset
					}
					f.Explanation = fmt.Sprintf("%s committed %s[%d]=%d, below the offset already committed: whoever consumes the partition next starts from the lower offset and processes the records in between again (an offset kept from an earlier assignment, or commits sent out of order)",
						s.MemberID, s.Topic, s.Partition, s.Offset)
					f.Suggestion = advice(BackwardsCommit)
					out = append(out, f)
				case timeline.SuspectNotOwned:
					f := newFinding(StaleOwnerCommit, g.id, Critical, at, s.MemberID)
					f.Members = e.infos(g, s.MemberID, s.Owner)
					f.Partitions = partitionsMap(part)
					f.Evidence["generation"] = s.Generation
					f.Evidence["offset"] = s.Offset
					f.Evidence["owner"] = s.Owner
					if s.CommittedKnown {
						f.Evidence["previousOffset"] = s.Committed
					}
					f.Explanation = fmt.Sprintf("%s committed %s[%d]=%d in generation %d, but that partition belongs to %s: the member commits offsets it kept from an earlier assignment (an offsets map never pruned on revocation). The owner's own progress is overwritten; after the next handover the records are processed again, or skipped",
						s.MemberID, s.Topic, s.Partition, s.Offset, s.Generation, orUnknown(s.Owner))
					f.Suggestion = advice(StaleOwnerCommit)
					out = append(out, f)
				}
			}
		}
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "another member"
	}
	return s
}
