//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"
)

// TestScenario4: two Java consumers with group.protocol=consumer (KIP-848).
// There is no JoinGroup or SyncGroup: each member heartbeats
// (ConsumerGroupHeartbeat) and the broker assigns partitions by topic id;
// when B joins, A revokes two of its four partitions on its own and B
// receives them, with no group-wide stop.
func TestScenario4(t *testing.T) {
	const topic, group = "kip848_topic", "test_group_4"
	freshTopic(t, topic, 4, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 400)
	a, b, moved := kip848Clients(t, bs, topic, group, nil, nil, 0)
	if r := k.finish(); r != nil {
		checkKIP848Timeline(t, r, topic, group, moved, a, b)
	}
}

// kip848Clients runs scenario 4's clients through bs, with more environment
// for each (clientSecurity), until both have stopped, hold after B's first
// batch. moved are the partitions B took from A.
func kip848Clients(t *testing.T, bs, topic, group string, envA, envB []string, hold time.Duration) (a, b *proc, moved []string) {
	t.Helper()
	if !kafkaAtLeast(4, 0) {
		// 3.9's KIP-848 is a preview, off unless the broker enables it
		// (group.coordinator.rebalance.protocols): run.sh leaves these
		// scenarios out on 3.x rather than test a configuration nobody
		// runs.
		t.Fatalf("KIP-848 (group.protocol=consumer) is generally available from Kafka 4.0; the broker is %s", kafkaVersion)
	}
	args := func(id string) []string {
		return []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--client-id", id,
			"--mode", "consumer", "--work-ms", "300"}
	}
	a = javaClientEnv(t, "java-A", envA, "consume", args("java-A")...)
	a.waitFor(0, 90*time.Second, "A owning 0-3", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Owned), parts(topic, 0, 1, 2, 3))
	})
	a.waitFor(0, 30*time.Second, "A's first batch", func(e event) bool { return e.Name == "polled" })
	markA := a.mark()
	b = javaClientEnv(t, "java-B", envB, "consume", args("java-B")...)
	gotB := b.waitFor(0, 90*time.Second, "B owning two partitions", func(e event) bool {
		return e.Name == "assigned" && len(all(e.Owned)) == 2
	})
	revA := a.waitFor(markA, 30*time.Second, "A revoking B's two partitions", func(e event) bool {
		return e.Name == "revoked" && len(e.Partitions) > 0
	})
	if !slices.Equal(all(revA.Partitions), all(gotB.Owned)) {
		t.Errorf("A revoked %v but B got %v", all(revA.Partitions), all(gotB.Owned))
	}
	b.waitFor(0, 30*time.Second, "B's first batch", func(e event) bool { return e.Name == "polled" })
	time.Sleep(hold)
	b.stop(60 * time.Second)
	a.stop(60 * time.Second)
	return a, b, all(gotB.Owned)
}

// checkKIP848Timeline checks scenario 4's story in the timeline: moved
// went from A to B, and what each client printed it owned after each
// assignment is one of its epochs.
func checkKIP848Timeline(t *testing.T, r *report, topic, group string, moved []string, a, b *proc) {
	t.Helper()
	g := r.group(t, group)
	if g.GroupProtocol != "consumer" {
		t.Errorf("groupProtocol %q; want consumer (KIP-848)", g.GroupProtocol)
	}
	for _, gen := range g.Generations {
		if gen.Mode != "consumer" {
			t.Errorf("epoch %d: mode %q; want consumer", gen.Generation, gen.Mode)
		}
	}
	// A's epochs: all four partitions, by topic name, then the two that
	// moved revoked. B's: the two added.
	ma, mb := g.consumerMember(t, "java-A"), g.consumerMember(t, "java-B")
	iAll := ma.epochWhere(func(e epoch) bool { return slices.Equal(all(e.Assignment), parts(topic, 0, 1, 2, 3)) })
	iRev := ma.epochWhere(func(e epoch) bool { return slices.Equal(all(e.Revoked), moved) })
	if iAll < 0 || iRev < 0 || iRev < iAll {
		t.Errorf("java-A's epochs do not show 0-3 then %v revoked:\n%s", moved, ma.summary())
	}
	if mb.epochWhere(func(e epoch) bool { return slices.Equal(all(e.Added), moved) && slices.Equal(all(e.Assignment), moved) }) < 0 {
		t.Errorf("java-B's epochs do not show %v added:\n%s", moved, mb.summary())
	}
	for _, m := range []*consumerMember{ma, mb} {
		if !slices.Equal(m.Subscription, []string{topic}) {
			t.Errorf("%s subscribed to %v; want [%s]", m.ClientID, m.Subscription, topic)
		}
	}
	checkOwnedInEpochs(t, g, "java-A", a, 0, 0)
	checkOwnedInEpochs(t, g, "java-B", b, 0, 0)
}
