//go:build e2e

package e2e

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScenario29: a consume-transform-produce exactly-once application
// (Java, EOSApp: read_committed consumer in a classic group with the range
// assignor, transactional producer, sendOffsetsToTransaction with the
// consumer's group metadata) revoked mid-transaction. Instance A reads the
// 300 records of eos_in's three partitions into one open transaction; B,
// a second instance, joins; A's revocation listener sends the
// transaction's offsets (a TxnOffsetCommit during the revocation) and
// commits the transaction, or aborts it. What B then reads of the
// partition it takes over is the client's own proof of the outcome: none
// after a commit, every record again after an abort. Run directly and
// through kproxy, both ways: the clients must see the same; through
// kproxy, the story must tell A's transactional commit during revocation,
// with the offsets, member, generation, transactional id and outcome A
// printed, and replay must equal the live report.
//
// The subtests consumer/commit and consumer/abort run the same with the
// group on KIP-848's protocol (EOSApp --protocol consumer): only the
// partition that moves to B is revoked, and A's TxnOffsetCommit carries
// its member epoch, which the story must tell as the commit's.
func TestScenario29(t *testing.T) {
	for _, protocol := range []string{"classic", "consumer"} {
		for _, mode := range []string{"commit", "abort"} {
			name := mode
			if protocol == "consumer" {
				name = "consumer/" + mode
			}
			t.Run(name, func(t *testing.T) {
				want := map[string]string{"commit": "committed", "abort": "aborted"}[mode]
				direct, proxied, ok := bothWays(t, func(t *testing.T, l *leg) int64 {
					return eosRun(t, l, protocol, mode, want)
				})
				if ok && direct != proxied {
					t.Errorf("B re-read %d records directly, %d through kproxy", direct, proxied)
				}
			})
		}
	}
}

// eosRun runs one leg of scenario 29 and returns how many records B read.
func eosRun(t *testing.T, l *leg, protocol, mode, want string) int64 {
	suffix := mode + "_" + l.name
	if protocol == "consumer" {
		suffix = "848_" + suffix
	}
	in, out, group := "eos_in_"+suffix, "eos_out_"+suffix, "eos_group_"+suffix
	freshTopic(t, in, 3, group)
	freshTopic(t, out, 3, "")
	feed(t, l.bs, in, 300)
	eos := func(name, txnID, runS string) *proc {
		return l.client(javaClient(t, name, "eos", "--bootstrap", l.bs, "--group", group, "--in", in, "--out", out,
			"--transactional-id", txnID, "--on-revoke", mode, "--run-s", runS, "--client-id", name, "--protocol", protocol))
	}
	a := eos("eos-A", "eos-29-A-"+l.name, "40")
	a.waitFor(0, 60*time.Second, "A reading all 300 records in its open transaction", func(e event) bool {
		return e.Name == "processed" && e.Total >= 300
	})
	mark := a.mark()
	b := eos("eos-B", "eos-29-B-"+l.name, "25")
	txn := a.waitFor(mark, 60*time.Second, "A ending its transaction on revocation", func(e event) bool {
		return e.Name == "txn" && e.State == "revocation"
	})
	if txn.Result != want {
		t.Fatalf("A's transaction on revocation: %s; want %s", txn, want)
	}
	bAssigned := b.waitFor(0, 60*time.Second, "B owning a partition", func(e event) bool {
		return e.Name == "assigned" && len(all(e.Partitions)) > 0
	})
	switch got := all(bAssigned.Partitions); {
	case protocol == "classic" && (len(got) != 1 || got[0] != in+"/2"):
		t.Errorf("B assigned %v; want %s/2 (range: A 0,1 and B 2)", got, in)
	case len(got) != 1:
		t.Errorf("B assigned %v; want one partition of %s", got, in)
	}
	// What A's transaction held for B's partition: its end offset.
	var held int64
	for _, p := range bAssigned.Partitions[in] {
		held += txn.Offsets[in][itoa(int(p))]
	}
	b.waitDone(60 * time.Second)
	a.waitDone(60 * time.Second)
	var readB int64
	for _, e := range b.snapshot() {
		if e.Name == "processed" {
			readB = e.Total
		}
	}
	switch want {
	case "committed":
		if readB != 0 {
			t.Errorf("B read %d records of a partition whose offsets A's transaction committed; want 0", readB)
		}
	case "aborted":
		if readB != held {
			t.Errorf("B read %d records after A's transaction aborted; want the %d A's transaction held", readB, held)
		}
	}
	t.Logf("%s: A's transaction on revocation %s (offsets %v, generation %d); B read %d records", l.name, txn.Result, txn.Offsets, txn.Generation, readB)
	if l.k == nil {
		return readB
	}
	// The live story, while kproxy still runs, once it has told the end
	// of A's transaction: the text report and the web page.
	waitLiveGroup(t, group, "the end of A's transaction", func(g *groupReport) bool {
		c := txnCommitOf(g, txn)
		return c != nil && c.Transaction.Outcome == want
	})
	liveText := getText(t, "http://"+proxyAdmin+"/timeline?group="+url.QueryEscape(group))
	const ready = `document.querySelectorAll('#chart circle.commit').length > 0`
	const read = `Array.from(document.querySelectorAll('#chart circle.commit')).map(c => c.textContent)`
	liveTitles := onPage(t, "eos-live", "http://"+proxyAdmin+"/", group, ready, read)
	l.check(t, group)
	r := l.k.replay()
	g := r.group(t, group)
	// A's later transactions (the partitions it keeps, read again after
	// an abort) may end in the revocation of B's departure: the one A
	// printed is the one of the generation it printed.
	var found bool
	for _, gen := range g.Generations {
		for _, c := range gen.CommitsDuringRevocation {
			if c.MemberID != txn.MemberID || c.Transaction == nil || c.Generation != txn.Generation {
				continue
			}
			found = true
			tr := c.Transaction
			if c.Result != "ok" || tr.TransactionalID != "eos-29-A-"+l.name || tr.Outcome != want || tr.EndedAt == nil {
				t.Errorf("gen %d: A's transactional commit during revocation: generation %d, result %s, transaction %+v; A printed %s",
					gen.Generation, c.Generation, c.Result, *tr, txn)
			}
			for p, off := range txn.Offsets[in] {
				if c.Offsets[in][p] != off {
					t.Errorf("gen %d: A's commit of %s[%s] = %d in the timeline; A sent %d", gen.Generation, in, p, c.Offsets[in][p], off)
				}
			}
		}
	}
	if !found {
		t.Errorf("no transactional commit during revocation by A (%s) of generation %d in the timeline (%s)", txn.MemberID, txn.Generation, r.path)
		return readB
	}

	// The same told in text (replay's entries, the live text report) and
	// on the page (live, and replay --format html's file): the commit
	// during revocation in its transaction, and its outcome.
	c := txnCommitOf(g, txn)
	tr := c.Transaction
	producer := fmt.Sprintf("transaction %s (producer %d epoch %d)", tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch)
	text, _ := runKproxyCmd(t, "replay", l.k.journal, "--format", "text")
	if err := os.WriteFile(filepath.Join(runDir(t), "timeline.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		fmt.Sprintf("commit during revocation %s gen %d in %s", c.MemberID, c.Generation, producer),
		fmt.Sprintf("%s of %s %s: its commit of gen %d", producer, c.MemberID, want, c.Generation),
	} {
		if !strings.Contains(string(text), w) {
			t.Errorf("replay --format text does not tell %q", w)
		}
	}
	if w := fmt.Sprintf("; %s %s at ", producer, want); !strings.Contains(liveText, fmt.Sprintf("commit during revocation %s gen %d at ", c.MemberID, c.Generation)) || !strings.Contains(liveText, w) {
		t.Errorf("the live text report does not show A's commit during revocation of gen %d with %q", c.Generation, w)
	}
	htmlFile := filepath.Join(runDir(t), "timeline.html")
	runKproxyCmd(t, "replay", l.k.journal, "--format", "html", "--output", htmlFile)
	fileTitles := onPage(t, "eos-file", "file://"+htmlFile+"#/", group, ready, read)
	for name, titles := range map[string][]string{"live": liveTitles, "replay --format html": fileTitles} {
		w := fmt.Sprintf("commit during revocation (gen %d)", c.Generation)
		if !slices.ContainsFunc(titles, func(s string) bool { return strings.HasPrefix(s, w) && strings.Contains(s, producer+" "+want) }) {
			t.Errorf("%s page: no commit marker %q with %q among %q", name, w, producer+" "+want, titles)
		}
	}
	return readB
}

// txnCommitOf is the transactional commit during revocation that txn,
// an EOSApp's "txn" event, printed, or nil.
func txnCommitOf(g *groupReport, txn event) *revCommit {
	for i := range g.Generations {
		for j := range g.Generations[i].CommitsDuringRevocation {
			c := &g.Generations[i].CommitsDuringRevocation[j]
			if c.MemberID == txn.MemberID && c.Transaction != nil && c.Generation == txn.Generation {
				return c
			}
		}
	}
	return nil
}
