package timeline

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// An exactly-once application (consume-transform-produce) commits its
// consumer's offsets inside its producer's transaction: TxnOffsetCommit
// (key 28) adds them to the transaction, and they become the group's
// committed offsets only when the same producer's EndTxn (key 26) commits
// it; an abort discards them. So a transactional commit is told like an
// OffsetCommit (during revocation, failed, suspect), but what it changes
// waits for its transaction's end: the offsets it committed, and its
// suspects, count only if the transaction commits.

// Transaction outcomes, as the report and the entries spell them.
const (
	TxnPending   = "pending"   // no EndTxn seen (yet)
	TxnCommitted = "committed" // EndTxn commit succeeded
	TxnAborted   = "aborted"   // EndTxn abort succeeded: the offsets were discarded
)

// txnKey names one transaction of one producer: EndTxn names it by the
// same transactional id, producer id and epoch as its TxnOffsetCommits.
// (From KIP-890's transactions V2 the epoch is bumped at every end, so
// each transaction has its own; before, the epoch is the producer's, and
// an EndTxn ends whatever its TxnOffsetCommits added since the last one.)
type txnKey struct {
	id         string
	producerID int64
	epoch      int16
}

// txnCommit is what a TxnOffsetCommit adds to its commit: the transaction
// that carries it, and that transaction's fate. Copies of the commit (the
// generation's, the remembered pool's) share it, so they all learn the
// fate.
type txnCommit struct {
	key     txnKey
	outcome string    // TxnPending, TxnCommitted or TxnAborted
	endedAt time.Time // the EndTxn's response time; zero while pending
	// told is set once the commit was told (during a revocation, or
	// failed): its transaction's end is then told too.
	told bool
	// held are the suspects found when the commit was answered, told
	// only if the transaction commits; heldIn is the generation to keep
	// them in (see suspectTarget).
	held   []suspect
	heldIn *generation
}

// pendingTxn is a transactional commit waiting for its EndTxn.
type pendingTxn struct {
	g *group
	c commit
}

// maxPendingTxns bounds the transactional commits waiting for an EndTxn;
// txnKeep is how long one waits at most once the bound is reached: Kafka
// aborts a transaction open longer than transaction.max.timeout.ms (15
// minutes by default), so an EndTxn that late never comes. A commit
// forgotten here stays pending in its generation.
const (
	maxPendingTxns = 10000
	txnKeep        = 15 * time.Minute
)

// pendTxn keeps c, a transactional commit of g, until its EndTxn.
func (e *Engine) pendTxn(g *group, c *commit) {
	if e.txns == nil {
		e.txns = map[txnKey][]pendingTxn{}
	}
	if e.pendingTxns >= maxPendingTxns {
		e.forgetTxns()
	}
	e.txns[c.txn().key] = append(e.txns[c.txn().key], pendingTxn{g: g, c: *c})
	e.pendingTxns++
}

// forgetTxns drops the commits waiting longer than txnKeep, else the
// oldest transaction's.
func (e *Engine) forgetTxns() {
	var oldest txnKey
	var oldestAt time.Time
	for k, ps := range e.txns {
		if e.now.Sub(ps[0].c.at()) > txnKeep {
			e.pendingTxns -= len(ps)
			delete(e.txns, k)
			continue
		}
		if oldestAt.IsZero() || ps[0].c.at().Before(oldestAt) {
			oldest, oldestAt = k, ps[0].c.at()
		}
	}
	if e.pendingTxns >= maxPendingTxns {
		e.pendingTxns -= len(e.txns[oldest])
		delete(e.txns, oldest)
	}
}

// endTxn handles an EndTxn exchange (key 26): the transactional commits of
// the same producer and epoch are committed or aborted. An EndTxn without
// a response, or refused, leaves them pending: the producer retries, or
// its transaction is aborted later by the coordinator.
func (e *Engine) endTxn(ev *decode.Event) {
	et := ev.EndTxn
	if !ev.Responded() || et.ErrorCode != 0 {
		return
	}
	k := txnKey{et.TransactionalID, et.ProducerID, et.ProducerEpoch}
	ps := e.txns[k]
	if ps == nil {
		return // a transaction without offsets of a told group
	}
	delete(e.txns, k)
	e.pendingTxns -= len(ps)
	outcome := TxnAborted
	if et.Commit {
		outcome = TxnCommitted
	}
	for i := range ps {
		p := &ps[i]
		p.c.txn().outcome, p.c.txn().endedAt = outcome, ev.RespondedAt
		p.g.txnEnded(&p.c)
		e.quiet[p.g.index] = time.Time{}
	}
}

// txnEnded applies the end of c's transaction: when it committed, c's
// offsets become the group's committed offsets and its suspects are told;
// when it aborted, nothing it committed counts. The end is told when the
// commit was, or when it aborted (the offsets are lost either way).
func (g *group) txnEnded(c *commit) {
	t := c.txn()
	if t.outcome == TxnCommitted {
		if c.responded {
			g.setCommitted(c)
		}
		for _, s := range t.held {
			g.tellSuspect(t.heldIn, s)
		}
	}
	t.held, t.heldIn = nil, nil
	if t.told || t.outcome == TxnAborted {
		g.emit(t.endedAt, KindTxnEnded, c.generation, c.member, g.txnEndText(c), g.txnEndFields(c))
	}
}

// txnEndText renders "transaction eos-0 (producer 4001 epoch 7) of A
// committed: its commit of gen 5 t[0]=12 [1]=9 made at 12:00:01.234 during
// revocation is now committed".
func (g *group) txnEndText(c *commit) string {
	var b strings.Builder
	b.WriteString("transaction ")
	writeTxn(&b, c.txn())
	fmt.Fprintf(&b, " of %s %s: its commit of gen %d", orNoMember(c.member), c.txn().outcome, c.generation)
	listed := 0
	for i, cp := range c.parts {
		if cp.code != 0 {
			continue
		}
		if listed == maxListed {
			writeMore(&b, len(c.parts)-i)
			break
		}
		b.WriteByte(' ')
		if listed == 0 || cp.topic != c.parts[i-1].topic {
			b.WriteString(cp.topic.name)
		}
		writeOffset(&b, cp.partition, cp.offset)
		listed++
	}
	fmt.Fprintf(&b, " made at %s", clock(c.at(), g.e.cfg.Location))
	if c.txn().told {
		b.WriteString(" during revocation")
	}
	switch {
	case c.txn().outcome == TxnCommitted:
		b.WriteString(" is now committed")
	case c.txn().told:
		b.WriteString(" was discarded: the next owner re-processes from the last committed offset")
	default:
		b.WriteString(" was discarded: whoever consumes those partitions next starts from the last committed offset")
	}
	return b.String()
}

func (g *group) txnEndFields(c *commit) map[string]any {
	f := g.txnFields(c)
	f["offsets"] = committedOffsets(c)
	f["commit_generation"] = c.generation
	f["commit_at"] = stamp(c.at())
	f["during_revocation"] = c.txn().told
	return f
}

// txnFields are the transaction's facts in an entry's fields.
func (g *group) txnFields(c *commit) map[string]any {
	t := c.txn()
	return map[string]any{"transactional_id": t.key.id, "producer_id": t.key.producerID,
		"producer_epoch": t.key.epoch, "transaction": t.outcome}
}

// committedOffsets is c's offsets by topic and partition, for the
// partitions whose commit succeeded.
func committedOffsets(c *commit) map[string]map[int32]int64 {
	m := map[string]map[int32]int64{}
	for _, p := range c.parts {
		if p.code != 0 {
			continue
		}
		if m[p.topic.name] == nil {
			m[p.topic.name] = map[int32]int64{}
		}
		m[p.topic.name][p.partition] = p.offset
	}
	return m
}

// writeTxn renders "eos-0 (producer 4001 epoch 7)".
func writeTxn(b *strings.Builder, t *txnCommit) {
	fmt.Fprintf(b, "%s (producer %d epoch %d)", t.key.id, t.key.producerID, t.key.epoch)
}

func orNoMember(id string) string {
	if id == "" {
		return "(no member)"
	}
	return id
}

// closeTxns tells, at the end of the input, the told transactional
// commits whose transaction never ended as far as kproxy saw.
func (e *Engine) closeTxns() {
	keys := slices.SortedFunc(maps.Keys(e.txns), func(a, b txnKey) int {
		return cmp.Or(e.txns[a][0].c.at().Compare(e.txns[b][0].c.at()), strings.Compare(a.id, b.id),
			cmp.Compare(a.producerID, b.producerID), cmp.Compare(a.epoch, b.epoch))
	})
	for _, k := range keys {
		ps := e.txns[k]
		for i := range ps {
			p := &ps[i]
			if !p.c.txn().told {
				continue
			}
			var b strings.Builder
			b.WriteString("transaction ")
			writeTxn(&b, p.c.txn())
			fmt.Fprintf(&b, " of %s never ended as far as kproxy saw (no EndTxn): its commit of gen %d made at %s during revocation counts only if the transaction committed",
				orNoMember(p.c.member), p.c.generation, clock(p.c.at(), e.cfg.Location))
			p.g.emit(e.now, KindPartial, p.c.generation, p.c.member, b.String(), p.g.txnFields(&p.c))
		}
	}
}

// txnReport is c's transaction in the report, nil for an OffsetCommit.
func txnReport(c *commit) *TransactionReport {
	t := c.txn()
	if t == nil {
		return nil
	}
	return &TransactionReport{TransactionalID: t.key.id, ProducerID: t.key.producerID, ProducerEpoch: t.key.epoch,
		Outcome: t.outcome, EndedAt: stampPtr(t.endedAt)}
}
