package timeline

import (
	"strings"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

// txnCommit appends a TxnOffsetCommit of one topic by member id of gen in
// transaction txn of producer pid, epoch epoch.
func (s *script) txnCommit(c client, req, resp float64, id string, gen int32, txn string, pid int64, epoch int16,
	topic string, offsets map[int32]int64, codes map[int32]int16) {
	ct := decode.CommitTopic{Topic: topic}
	for _, p := range sortedKeys(offsets) {
		ct.Partitions = append(ct.Partitions, decode.CommitPartition{Partition: p, Offset: offsets[p], ErrorCode: codes[p]})
	}
	s.ev(c, 28, req, resp).TxnOffsetCommit = &decode.TxnOffsetCommit{TransactionalID: txn, ProducerID: pid, ProducerEpoch: epoch,
		MemberID: id, Generation: gen, Topics: []decode.CommitTopic{ct}}
}

// endTxn appends an EndTxn of transaction txn, producer pid and epoch:
// commit or abort, answered with code. It names no group.
func (s *script) endTxn(c client, req, resp float64, txn string, pid int64, epoch int16, commit bool, code int16) {
	e := s.ev(c, 26, req, resp)
	e.Group = ""
	e.EndTxn = &decode.EndTxn{TransactionalID: txn, ProducerID: pid, ProducerEpoch: epoch, Commit: commit, ErrorCode: code,
		NextProducerID: pid, NextProducerEpoch: epoch + 1}
}

// eosScript is seedScript's group made of an exactly-once application:
// A commits its offsets in transactions of producer 4001 (transactions
// V2: one epoch per transaction). Transaction epoch 3, before the
// rebalance, commits; B joins; A's transaction epoch 4, whose
// TxnOffsetCommit is made during the revocation, ends as end says
// (commit, abort, or -1: no EndTxn seen).
func eosScript(end int) *script {
	s := newScript("test_group_1")
	s.memberIDRequired(cA, 0, 0.001, "A-1")
	s.join(cA, 0.002, 0.010, jg("A-1", 1, "A-1", "A-1"))
	all := tp("round_topic", 0, 1, 2)
	s.sync(cA, 0.011, 0.013, "A-1", 1, all, map[string][]decode.TopicPartitions{"A-1": all})
	s.hbs(cA, "A-1", 1, 3, 11)
	s.txnCommit(cA, 10.0, 10.002, "A-1", 1, "eos-A", 4001, 3, "round_topic", map[int32]int64{0: 5, 1: 4, 2: 6}, nil)
	s.endTxn(cA, 10.003, 10.010, "eos-A", 4001, 3, true, 0)
	s.memberIDRequired(cB, 11.200, 11.201, "B-1")
	s.hb(cA, 12.0, 12.001, "A-1", 1, errRebalanceInProgress)
	s.txnCommit(cA, 12.100, 12.103, "A-1", 1, "eos-A", 4001, 4, "round_topic", map[int32]int64{0: 12, 1: 9, 2: 11}, nil)
	if end >= 0 {
		s.endTxn(cA, 12.104, 12.120, "eos-A", 4001, 4, end == 1, 0)
	}
	s.hb(cA, 15.0, 15.001, "A-1", 1, errRebalanceInProgress)
	s.join(cA, 19.860, 19.870, jg("A-1", 2, "A-1", "A-1", "B-1"))
	s.join(cB, 11.204, 19.870, jg("B-1", 2, "A-1"))
	s.sync(cB, 19.871, 19.880, "B-1", 2, tp("round_topic", 2), nil)
	s.sync(cA, 19.872, 19.875, "A-1", 2, tp("round_topic", 0, 1), map[string][]decode.TopicPartitions{
		"A-1": tp("round_topic", 0, 1), "B-1": tp("round_topic", 2)})
	s.hbs(cA, "A-1", 2, 22, 30)
	s.hbs(cB, "B-1", 2, 22, 30)
	return s
}

func TestTxnCommitDuringRevocation(t *testing.T) {
	cases := []struct {
		name    string
		end     int
		outcome string
		endText string // in the txn_ended (or, pending, partial) entry
	}{
		{"committed", 1, TxnCommitted, "committed: its commit of gen 1 round_topic[0]=12 [1]=9 [2]=11 made at 14:02:12.100 during revocation is now committed"},
		{"aborted", 0, TxnAborted, "aborted: its commit of gen 1 round_topic[0]=12 [1]=9 [2]=11 made at 14:02:12.100 during revocation was discarded"},
		{"pending", -1, TxnPending, "never ended as far as kproxy saw (no EndTxn)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			entries, r, _ := run(t, Config{}, eosScript(c.end).events(), 30)
			t.Log("\n" + entryLines(entries))
			g2 := genOf(t, r, "test_group_1", 2)
			if len(g2.CommitsDuringRevocation) != 1 {
				t.Fatalf("commits during revocation = %d; want 1", len(g2.CommitsDuringRevocation))
			}
			cr := g2.CommitsDuringRevocation[0]
			tr := cr.Transaction
			if cr.MemberID != "A-1" || cr.Result != "ok" || tr == nil {
				t.Fatalf("commit = %+v; want A-1's, ok, transactional", cr)
			}
			if tr.TransactionalID != "eos-A" || tr.ProducerID != 4001 || tr.ProducerEpoch != 4 || tr.Outcome != c.outcome {
				t.Errorf("transaction = %+v; want eos-A 4001/4 %s", tr, c.outcome)
			}
			if (tr.EndedAt == nil) != (c.outcome == TxnPending) {
				t.Errorf("endedAt = %v for outcome %s", tr.EndedAt, c.outcome)
			}
			if e := findEntry(entries, KindCommit, "commit during revocation A-1 gen 1 in transaction eos-A (producer 4001 epoch 4)"); e == nil ||
				e.Fields["transactional_id"] != "eos-A" || e.Fields["during_revocation"] != true {
				t.Errorf("no commit during revocation entry naming the transaction: %+v", e)
			}
			kind := KindTxnEnded
			if c.outcome == TxnPending {
				kind = KindPartial
			}
			if findEntry(entries, kind, c.endText) == nil {
				t.Errorf("no %s entry with %q", kind, c.endText)
			}
			// Transaction epoch 3 committed outside any rebalance: silent.
			if e := findEntry(entries, KindTxnEnded, "epoch 3"); e != nil {
				t.Errorf("a transaction outside a rebalance was told: %s", e.Text)
			}
		})
	}
}

// TestAbortedOffsetsNeverCommitted: after an aborted transactional commit
// of offset 50, an OffsetCommit of 20 is no backwards commit (the last
// committed offset is the committed transaction's 12), and after a
// committed one it is.
func TestAbortedOffsetsNeverCommitted(t *testing.T) {
	for _, commit := range []bool{false, true} {
		s := newScript("g")
		s.memberIDRequired(cA, 0, 0.001, "A-1")
		s.join(cA, 0.002, 0.010, jg("A-1", 1, "A-1", "A-1"))
		all := tp("round_topic", 0)
		s.sync(cA, 0.011, 0.013, "A-1", 1, all, map[string][]decode.TopicPartitions{"A-1": all})
		s.txnCommit(cA, 1, 1.001, "A-1", 1, "eos-A", 7, 0, "round_topic", map[int32]int64{0: 12}, nil)
		s.endTxn(cA, 1.002, 1.003, "eos-A", 7, 0, true, 0)
		s.txnCommit(cA, 2, 2.001, "A-1", 1, "eos-A", 7, 1, "round_topic", map[int32]int64{0: 50}, nil)
		s.endTxn(cA, 2.002, 2.003, "eos-A", 7, 1, commit, 0)
		s.commit(cA, 3, 3.001, "A-1", 1, "round_topic", map[int32]int64{0: 20}, nil)
		entries, _, _ := run(t, Config{}, s.events(), 5)
		t.Log("\n" + entryLines(entries))
		backwards := findEntry(entries, KindSuspectCommit, "moves the committed offset back from 50")
		if commit != (backwards != nil) {
			t.Errorf("transaction committed %v: backwards suspect %v", commit, backwards)
		}
		if aborted := findEntry(entries, KindTxnEnded, "aborted"); !commit && (aborted == nil || aborted.Fields["transaction"] != TxnAborted) {
			t.Errorf("no txn_ended entry for the abort: %v", aborted)
		}
	}
}

// TestTxnSuspectHeldUntilCommit: a transactional commit of a partition the
// member does not own is a stale-owner suspect only once its transaction
// commits; an aborted one changes nothing.
func TestTxnSuspectHeldUntilCommit(t *testing.T) {
	for _, commit := range []bool{false, true} {
		s := newScript("g")
		s.memberIDRequired(cA, 0, 0.001, "A-1")
		s.join(cA, 0.002, 0.010, jg("A-1", 1, "A-1", "A-1"))
		s.sync(cA, 0.011, 0.013, "A-1", 1, tp("round_topic", 0), map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0)})
		s.txnCommit(cA, 1, 1.001, "A-1", 1, "eos-A", 7, 0, "round_topic", map[int32]int64{5: 12}, nil)
		before := len(s.evs)
		s.endTxn(cA, 1.5, 1.501, "eos-A", 7, 0, commit, 0)
		entries, r, _ := run(t, Config{}, s.events(), 5)
		t.Log("\n" + entryLines(entries))
		// Nothing is told before the EndTxn.
		early, _, _ := run(t, Config{}, s.events()[:before], -1)
		if n := kinds(early)[KindSuspectCommit]; n != 0 {
			t.Errorf("%d suspects told before the transaction ended", n)
		}
		n := kinds(entries)[KindSuspectCommit]
		g1 := genOf(t, r, "g", 1)
		if commit && (n != 1 || len(g1.SuspectCommits) != 1 || g1.SuspectCommits[0].Reasons[0] != SuspectNotOwned) {
			t.Errorf("committed: %d suspect entries, report %+v; want one not_owned", n, g1.SuspectCommits)
		}
		if !commit && (n != 0 || len(g1.SuspectCommits) != 0) {
			t.Errorf("aborted: %d suspect entries, report %+v; want none", n, g1.SuspectCommits)
		}
	}
}

// TestEndTxnRefusedOrUnanswered: an EndTxn refused, or without a
// response, leaves the commit pending; the retry that succeeds ends it.
// Transactions V1 (one epoch for the producer's life): the EndTxn ends
// every commit made since the last one.
func TestEndTxnRefusedOrUnanswered(t *testing.T) {
	s := eosScript(-1)
	s.endTxn(cA, 12.104, -1, "eos-A", 4001, 4, true, 0)
	s.endTxn(cA, 12.200, 12.201, "eos-A", 4001, 4, true, 51) // CONCURRENT_TRANSACTIONS
	s.endTxn(cA, 12.050, 12.060, "other", 4001, 4, true, 0)  // another transactional id
	entries, r, _ := run(t, Config{}, s.events(), 30)
	if tr := genOf(t, r, "test_group_1", 2).CommitsDuringRevocation[0].Transaction; tr.Outcome != TxnPending {
		t.Errorf("outcome %s after a refused and an unanswered EndTxn; want pending", tr.Outcome)
	}
	if n := kinds(entries)[KindTxnEnded]; n != 0 {
		t.Errorf("%d txn_ended entries; want none", n)
	}
	s.endTxn(cA, 12.300, 12.310, "eos-A", 4001, 4, true, 0)
	_, r, _ = run(t, Config{}, s.events(), 30)
	if tr := genOf(t, r, "test_group_1", 2).CommitsDuringRevocation[0].Transaction; tr.Outcome != TxnCommitted || *tr.EndedAt != stamp(sec(12.310)) {
		t.Errorf("transaction %+v after the retry; want committed at 12.310", tr)
	}
}

// TestTxnFailedCommit: a TxnOffsetCommit refused for a stale generation
// (KIP-447 fencing a zombie) is told as a failed commit naming the
// transaction; the partitions refused are not pending.
func TestTxnFailedCommit(t *testing.T) {
	s := newScript("g")
	s.memberIDRequired(cA, 0, 0.001, "A-1")
	s.join(cA, 0.002, 0.010, jg("A-1", 1, "A-1", "A-1"))
	s.sync(cA, 0.011, 0.013, "A-1", 1, tp("round_topic", 0, 1), map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1)})
	s.txnCommit(cA, 1, 1.001, "A-1", 0, "eos-A", 7, 0, "round_topic", map[int32]int64{0: 12, 1: 3}, map[int32]int16{0: errIllegalGeneration})
	s.endTxn(cA, 1.5, 1.501, "eos-A", 7, 0, false, 0)
	entries, _, e := run(t, Config{}, s.events(), 5)
	t.Log("\n" + entryLines(entries))
	f := findEntry(entries, KindCommit, "commit A-1 gen 0 in transaction eos-A (producer 7 epoch 0)")
	if f == nil || !strings.Contains(f.Text, "FAILED round_topic[0] ILLEGAL_GENERATION") ||
		!strings.Contains(f.Text, "the others count only if the transaction commits") {
		t.Fatalf("failed commit entry = %+v", f)
	}
	if end := findEntry(entries, KindTxnEnded, "aborted: its commit of gen 0 round_topic[1]=3 made"); end == nil {
		t.Error("no txn_ended entry telling the abort of the partition that was accepted")
	}
	if e.pendingTxns != 0 || len(e.txns) != 0 {
		t.Errorf("%d commits still pending", e.pendingTxns)
	}
}
