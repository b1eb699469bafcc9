package decode

// TxnOffsetCommit (key 28) and EndTxn (key 26), as kmsg knows them:
//
//   TxnOffsetCommit v0-v6, flexible from v3:
//     v0: TransactionalID, Group, ProducerID, ProducerEpoch,
//         Topics[Partitions{Partition, Offset, Metadata}]; response
//         per-partition ErrorCode.
//     v1: same as v0 (throttling after the response).
//     v2: per-partition LeaderEpoch.
//     v3: flexible; Generation, MemberID and InstanceID (KIP-447), so
//         that the group coordinator fences a zombie member's commits.
//     v4: same as v3 (KIP-890 part 1: TRANSACTION_ABORTABLE).
//     v5: same as v4 (KIP-890 part 2, transactions V2: the request also
//         adds the group to the transaction, as AddOffsetsToTxn did).
//     v6: topics named by TopicID instead of name (KIP-1319); a stale
//         member epoch is STALE_MEMBER_EPOCH and a missing group
//         GROUP_ID_NOT_FOUND, both ILLEGAL_GENERATION before.
//   EndTxn v0-v5, flexible from v3:
//     v0: TransactionalID, ProducerID, ProducerEpoch, Commit; response
//         ErrorCode.
//     v5: response ProducerID and ProducerEpoch for the next
//         transaction (KIP-890 part 2: the epoch is bumped at every end).
//
// A TxnOffsetCommit adds offsets to the producer's open transaction; they
// are committed only when the same producer (transactional id, producer
// id and epoch) ends the transaction with EndTxn Commit, and discarded
// when it aborts.

import "github.com/twmb/franz-go/pkg/kmsg"

func decodeTxnOffsetCommit(_ *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.TxnOffsetCommitRequest)
	e.Group = q.Group
	c := &TxnOffsetCommit{
		TransactionalID: q.TransactionalID,
		ProducerID:      q.ProducerID,
		ProducerEpoch:   q.ProducerEpoch,
		Generation:      -1,
	}
	if q.Version >= 3 {
		c.MemberID, c.InstanceID, c.Generation = q.MemberID, str(q.InstanceID), q.Generation
	}
	c.Topics = make([]CommitTopic, len(q.Topics))
	for i, t := range q.Topics {
		ct := &c.Topics[i]
		ct.Topic, ct.TopicID = t.Topic, t.TopicID
		ct.Partitions = make([]CommitPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			ct.Partitions[j] = CommitPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: str(p.Metadata)}
		}
	}
	if len(c.Topics) == 0 {
		c.Topics = nil
	}
	sortCommits(c.Topics)
	if p, ok := resp.(*kmsg.TxnOffsetCommitResponse); ok {
		added := false
		for _, t := range p.Topics {
			for _, r := range t.Partitions {
				i, j, ok := searchCommit(c.Topics, t.Topic, t.TopicID, r.Partition)
				if !ok {
					c.Topics = addCommitResult(c.Topics, t.Topic, t.TopicID, r.Partition, r.ErrorCode)
					added = true
					continue
				}
				c.Topics[i].Partitions[j].ErrorCode = r.ErrorCode
			}
		}
		if added {
			sortCommits(c.Topics)
		}
	}
	e.TxnOffsetCommit = c
	return append(dst, e)
}

func decodeEndTxn(_ *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.EndTxnRequest)
	t := &EndTxn{
		TransactionalID:   q.TransactionalID,
		ProducerID:        q.ProducerID,
		ProducerEpoch:     q.ProducerEpoch,
		Commit:            q.Commit,
		NextProducerID:    -1,
		NextProducerEpoch: -1,
	}
	if p, ok := resp.(*kmsg.EndTxnResponse); ok {
		t.ErrorCode = p.ErrorCode
		if p.Version >= 5 {
			t.NextProducerID, t.NextProducerEpoch = p.ProducerID, p.ProducerEpoch
		}
	}
	e.EndTxn = t
	return append(dst, e)
}
