//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"
)

// TestScenario6: static membership. Two Java consumers with
// group.instance.id; A is stopped (a static member sends no LeaveGroup) and
// started again with the same instance id well within its session timeout.
// The coordinator hands A's partitions back without a rebalance: B revokes
// nothing, and the timeline shows A's rejoin under a new member id and no
// new generation.
func TestScenario6(t *testing.T) {
	const topic, group = "static_topic", "test_group_6"
	freshTopic(t, topic, 4, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 400)

	args := func(id string) []string {
		return []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--client-id", id,
			"--mode", "static", "--instance-id", "static-" + id, "--session-ms", "30000", "--work-ms", "300"}
	}
	a := javaClient(t, "java-A", "consume", args("java-A")...)
	b := javaClient(t, "java-B", "consume", args("java-B")...)
	owned := map[string][]string{"java-A": parts(topic, 0, 1), "java-B": parts(topic, 2, 3)}
	a.waitFor(0, 90*time.Second, "A owning 0,1", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Owned), owned["java-A"])
	})
	b.waitFor(0, 90*time.Second, "B owning 2,3", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Owned), owned["java-B"])
	})
	a.waitFor(0, 30*time.Second, "A's first batch", func(e event) bool { return e.Name == "polled" })

	markB := b.mark()
	a.stop(60 * time.Second)
	stoppedAt := time.Now()
	a2 := javaClient(t, "java-A-again", "consume", args("java-A")...)
	back := a2.waitFor(0, 60*time.Second, "A again owning 0,1", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Owned), owned["java-A"])
	})
	if d := back.At().Sub(stoppedAt); d > 25*time.Second {
		t.Fatalf("A came back %s after it stopped: not within its 30 s session timeout", d)
	}
	a2.waitFor(0, 30*time.Second, "A's first batch after the restart", func(e event) bool { return e.Name == "polled" })
	for _, e := range b.snapshot()[markB:] {
		if e.Name == "revoked" || e.Name == "assigned" {
			t.Errorf("B saw a rebalance while A restarted: %s", e)
		}
	}
	b.stop(60 * time.Second)
	a2.stop(60 * time.Second)
	r := k.finish()
	if r == nil {
		return
	}
	g := r.group(t, group)

	// One generation holds both static members, and A's restart adds none.
	var gens []*generation
	for i := range g.Generations {
		gen := &g.Generations[i]
		if ma, mb := gen.member("java-A"), gen.member("java-B"); ma != nil && mb != nil {
			if ma.InstanceID != "static-java-A" || mb.InstanceID != "static-java-B" {
				t.Errorf("gen %d: instance ids %q, %q; want static-java-A, static-java-B", gen.Generation, ma.InstanceID, mb.InstanceID)
			}
			gens = append(gens, gen)
		}
	}
	if len(gens) != 1 {
		t.Fatalf("%d generations with both static members; want 1 (A's restart must not rebalance):\n%s", len(gens), g.summary())
	}
	gen := gens[0]
	for _, n := range []string{"java-A", "java-B"} {
		if got := all(gen.member(n).Assignment); !slices.Equal(got, owned[n]) {
			t.Errorf("gen %d: %s's assignment %v; want %v", gen.Generation, n, got, owned[n])
		}
	}
	// A's restart: a JoinGroup answered within the generation, under a new
	// member id that replaces the old one.
	var rj *rejoin
	for i := range gen.RejoinsWithoutRebalance {
		if gen.RejoinsWithoutRebalance[i].InstanceID == "static-java-A" {
			rj = &gen.RejoinsWithoutRebalance[i]
		}
	}
	if rj == nil {
		t.Fatalf("gen %d: no rejoin without rebalance for static-java-A: %+v", gen.Generation, gen.RejoinsWithoutRebalance)
	}
	if rj.Replaces == "" || rj.Replaces == rj.MemberID {
		t.Errorf("gen %d: A's rejoin as %q replaces %q; want a new member id replacing the old one", gen.Generation, rj.MemberID, rj.Replaces)
	}
}
