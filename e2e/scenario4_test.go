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

	args := func(id string) []string {
		return []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--client-id", id,
			"--mode", "consumer", "--work-ms", "300"}
	}
	a := javaClient(t, "java-A", "consume", args("java-A")...)
	a.waitFor(0, 90*time.Second, "A owning 0-3", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Owned), parts(topic, 0, 1, 2, 3))
	})
	a.waitFor(0, 30*time.Second, "A's first batch", func(e event) bool { return e.Name == "polled" })
	markA := a.mark()
	b := javaClient(t, "java-B", "consume", args("java-B")...)
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
	b.stop(60 * time.Second)
	a.stop(60 * time.Second)
	if r := k.finish(); r != nil {
		r.group(t, group)
	}
	// TODO(e2e): assert the KIP-848 epoch timeline (members' epochs,
	// assignments by topic name) once docs/timeline-json.md documents it.
}
