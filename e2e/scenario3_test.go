//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"
)

// TestScenario3: two Java consumers with cooperative-sticky. A owns all four
// partitions; B joins. In the first round A keeps 0,1 and revokes 2,3 while
// B gets nothing; A rejoins at once, and the follow-up round gives B 2,3.
// The timeline shows both rounds and links the second to the first.
func TestScenario3(t *testing.T) {
	const topic, group = "coop_topic", "test_group_3"
	freshTopic(t, topic, 4, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 400)
	cooperativeClients(t, bs, topic, group, nil, nil, 0)
	if r := k.finish(); r != nil {
		checkCooperativeTimeline(t, r, topic, group)
	}
}

// cooperativeClients runs scenario 3's clients through bs, with more
// environment for each (clientSecurity), until both have stopped, hold
// after B's first batch.
func cooperativeClients(t *testing.T, bs, topic, group string, envA, envB []string, hold time.Duration) (a, b *proc) {
	t.Helper()
	args := func(id string) []string {
		return []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--client-id", id,
			"--mode", "cooperative", "--work-ms", "300"}
	}
	a = javaClientEnv(t, "java-A", envA, "consume", args("java-A")...)
	a.waitFor(0, 90*time.Second, "A owning 0-3", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Owned), parts(topic, 0, 1, 2, 3))
	})
	a.waitFor(0, 30*time.Second, "A's first batch", func(e event) bool { return e.Name == "polled" })
	markA := a.mark()
	b = javaClientEnv(t, "java-B", envB, "consume", args("java-B")...)
	b.waitFor(0, 90*time.Second, "B owning 2,3", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Owned), parts(topic, 2, 3))
	})
	// Cooperative: A gives up only what moves, and never all it owns.
	for _, e := range a.snapshot()[markA:] {
		if e.Name == "revoked" && !slices.Equal(all(e.Partitions), parts(topic, 2, 3)) {
			t.Errorf("A revoked %v; want only 2,3 to move", all(e.Partitions))
		}
	}
	a.waitFor(markA, 10*time.Second, "A revoking 2,3", func(e event) bool {
		return e.Name == "revoked" && slices.Equal(all(e.Partitions), parts(topic, 2, 3))
	})
	b.waitFor(0, 30*time.Second, "B's first batch", func(e event) bool { return e.Name == "polled" })
	time.Sleep(hold)
	b.stop(60 * time.Second)
	a.stop(60 * time.Second)
	return a, b
}

// checkCooperativeTimeline checks scenario 3's story in the timeline.
func checkCooperativeTimeline(t *testing.T, r *report, topic, group string) {
	t.Helper()
	g := r.group(t, group)

	_, i := g.mustFind(t, 0, "java-A")
	round1, j := g.mustFind(t, i+1, "java-A", "java-B")
	if round1.Protocol != "cooperative-sticky" {
		t.Errorf("gen %d: protocol %q; want cooperative-sticky", round1.Generation, round1.Protocol)
	}
	if got := all(round1.member("java-A").Assignment); !slices.Equal(got, parts(topic, 0, 1)) {
		t.Errorf("round 1 (gen %d): A's assignment %v; want 0,1", round1.Generation, got)
	}
	if got := all(round1.member("java-A").Revoked); !slices.Equal(got, parts(topic, 2, 3)) {
		t.Errorf("round 1 (gen %d): A revoked %v; want 2,3", round1.Generation, got)
	}
	if got := all(round1.member("java-B").Assignment); len(got) != 0 {
		t.Errorf("round 1 (gen %d): B's assignment %v; want nothing until A has revoked", round1.Generation, got)
	}
	if j+1 >= len(g.Generations) {
		t.Fatalf("no generation after round 1 (gen %d):\n%s", round1.Generation, g.summary())
	}
	round2 := &g.Generations[j+1]
	if got := round2.clientIDs(); !slices.Equal(got, []string{"java-A", "java-B"}) {
		t.Fatalf("round 2 (gen %d) members %v; want java-A, java-B", round2.Generation, got)
	}
	if got := all(round2.member("java-B").Added); !slices.Equal(got, parts(topic, 2, 3)) {
		t.Errorf("round 2 (gen %d): B added %v; want 2,3", round2.Generation, got)
	}
	if got := all(round2.member("java-A").Assignment); !slices.Equal(got, parts(topic, 0, 1)) {
		t.Errorf("round 2 (gen %d): A's assignment %v; want 0,1 kept", round2.Generation, got)
	}
	if round2.FollowUpOf == nil || *round2.FollowUpOf != round1.Generation || round2.Trigger.Kind != "cooperative_follow_up" {
		t.Errorf("round 2 (gen %d): followUpOf %v, trigger %+v; want a cooperative_follow_up of round 1 (gen %d)",
			round2.Generation, deref(round2.FollowUpOf), round2.Trigger, round1.Generation)
	}
	for _, gen := range []*generation{round1, round2} {
		if gen.Mode != "cooperative" || gen.Unsettled != "" {
			t.Errorf("gen %d: mode %q, unsettled %q; want a cooperative chain that settles", gen.Generation, gen.Mode, gen.Unsettled)
		}
	}
}
