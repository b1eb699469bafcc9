//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"
)

// TestScenario1 is the classic two-consumer story, in kafka-python: consumer
// A owns round_topic 0,1,2; B joins later; A, in the middle of 2 s of work
// per batch, commits its processed offsets from on_partitions_revoked; the
// group waits for A; range gives A 0,1 and B 2. It also shows Kafka's
// default group.initial.rebalance.delay.ms (3 s) holding the first
// generation back.
func TestScenario1(t *testing.T) {
	const topic, group = "round_topic", "test_group_1"
	freshTopic(t, topic, 3, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 600)

	a, b, commit := runSplit(t, topic, group, bs, bs)
	b.stop(60 * time.Second)
	a.stop(60 * time.Second)
	r := k.finish()
	if r == nil {
		return
	}
	g := r.group(t, group)

	// Generation with A alone: 0,1,2, range, A leads, and the initial
	// rebalance delay held it back at least 3 s.
	first, i := g.mustFind(t, 0, "consumer-A")
	ma := first.member("consumer-A")
	if got := all(ma.Assignment); !slices.Equal(got, parts(topic, 0, 1, 2)) {
		t.Errorf("gen %d: A's assignment %v; want %v", first.Generation, got, parts(topic, 0, 1, 2))
	}
	if first.ProtocolType != "consumer" || first.Protocol != "range" {
		t.Errorf("gen %d: protocol %s/%s; want consumer/range", first.Generation, first.ProtocolType, first.Protocol)
	}
	if first.Leader != ma.MemberID {
		t.Errorf("gen %d: leader %q; want A %q", first.Generation, first.Leader, ma.MemberID)
	}
	if d := first.StableAt.Sub(first.StartedAt); d < 3*time.Second {
		t.Errorf("gen %d: stable %s after it started; want >= 3s (group.initial.rebalance.delay.ms default)", first.Generation, d)
	}

	// The next generation, with B: triggered by B joining, A 0,1 (2
	// revoked), B 2 (added), the group waited for A, A's commit succeeded.
	second, _ := g.mustFind(t, i+1, "consumer-A", "consumer-B")
	if second.Generation <= first.Generation {
		t.Errorf("generation with B is %d; want after %d", second.Generation, first.Generation)
	}
	checkSplit(t, second, topic, commit)
	ma, mb := second.member("consumer-A"), second.member("consumer-B")
	if got := all(mb.Added); !slices.Equal(got, parts(topic, 2)) {
		t.Errorf("gen %d: B's added %v; want %v", second.Generation, got, parts(topic, 2))
	}
	if second.Mode != "eager" {
		t.Errorf("gen %d: mode %q; want eager", second.Generation, second.Mode)
	}
	if second.Protocol != "range" || second.Leader != ma.MemberID {
		t.Errorf("gen %d: protocol %q leader %q; want range led by A %q", second.Generation, second.Protocol, second.Leader, ma.MemberID)
	}
	if !ma.JoinedAt.After(mb.JoinedAt) {
		t.Errorf("gen %d: A rejoined at %s, B joined at %s; want A last, the group waiting for it", second.Generation, ma.JoinedAt, mb.JoinedAt)
	}
}

// runSplit drives scenario 1's clients in group on topic (three
// partitions): kafka-python A (2 s of work per batch, bootstrapping from
// bootA) owns 0,1,2 and polls; B (4 s, from bootB) joins; A commits its
// processed offsets from on_partitions_revoked, after its revocation; A
// ends with 0,1 and B with 2, and B polls. It returns A, B and A's commit.
func runSplit(t *testing.T, topic, group, bootA, bootB string) (a, b *proc, commit event) {
	t.Helper()
	common := []string{"--group", group, "--topic", topic, "--max-poll-records", "10"}
	a = kafkaPython(t, "consumer-A", append(common, "--bootstrap", bootA, "--client-id", "consumer-A", "--work-ms", "2000")...)
	a.waitFor(0, 60*time.Second, "A owning "+topic+" 0,1,2", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1, 2))
	})
	a.waitFor(0, 30*time.Second, "A's first batch", func(e event) bool { return e.Name == "polled" })

	markA := a.mark()
	b = kafkaPython(t, "consumer-B", append(common, "--bootstrap", bootB, "--client-id", "consumer-B", "--work-ms", "4000")...)
	b.waitFor(0, 60*time.Second, "B owning "+topic+" 2", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 2))
	})
	revoked := a.waitFor(markA, 10*time.Second, "A's revocation", func(e event) bool { return e.Name == "revoked" && len(e.Partitions) > 0 })
	commit = a.waitFor(markA, 10*time.Second, "A's commit from on_partitions_revoked", func(e event) bool { return e.Name == "commit" })
	if commit.Error != "" {
		t.Fatalf("A's commit during revocation failed: %s", commit)
	}
	if commit.MS < revoked.MS {
		t.Fatalf("A committed before its revocation: %s then %s", commit, revoked)
	}
	a.waitFor(markA, 30*time.Second, "A owning "+topic+" 0,1", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1))
	})
	b.waitFor(0, 30*time.Second, "B's first batch", func(e event) bool { return e.Name == "polled" })
	return a, b, commit
}

// checkSplit checks the timeline's generation of runSplit with B: A keeps
// 0,1 of topic and has 2 revoked, B gets 2, B's joining triggered it, the
// group waited for A, and A's commit during the revocation succeeded with
// the offsets the client committed (commit).
func checkSplit(t *testing.T, second *generation, topic string, commit event) {
	t.Helper()
	ma, mb := second.member("consumer-A"), second.member("consumer-B")
	if got := all(ma.Assignment); !slices.Equal(got, parts(topic, 0, 1)) {
		t.Errorf("gen %d: A's assignment %v; want %v", second.Generation, got, parts(topic, 0, 1))
	}
	if got := all(mb.Assignment); !slices.Equal(got, parts(topic, 2)) {
		t.Errorf("gen %d: B's assignment %v; want %v", second.Generation, got, parts(topic, 2))
	}
	if got := all(ma.Revoked); !slices.Equal(got, parts(topic, 2)) {
		t.Errorf("gen %d: A's revoked %v; want %v", second.Generation, got, parts(topic, 2))
	}
	if second.Trigger.Kind != "member_joined" || second.Trigger.Member != mb.MemberID {
		t.Errorf("gen %d: trigger %+v; want member_joined by B %q", second.Generation, second.Trigger, mb.MemberID)
	}
	if second.WaitedFor != ma.MemberID {
		t.Errorf("gen %d: waited for %q; want A %q", second.Generation, second.WaitedFor, ma.MemberID)
	}
	var found bool
	for _, c := range second.CommitsDuringRevocation {
		if c.MemberID != ma.MemberID {
			continue
		}
		found = true
		if len(c.Errors) != 0 || c.Failed || c.Result != "ok" {
			t.Errorf("gen %d: A's commit during revocation: result %q, errors %v; want ok", second.Generation, c.Result, c.Errors)
		}
		for p, off := range commit.Offsets[topic] {
			if c.Offsets[topic][p] != off {
				t.Errorf("gen %d: A's commit of %s[%s] = %d in the timeline; the client committed %d", second.Generation, topic, p, c.Offsets[topic][p], off)
			}
		}
	}
	if !found {
		t.Errorf("gen %d: no commit during revocation by A", second.Generation)
	}
}
