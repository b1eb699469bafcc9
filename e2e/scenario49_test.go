//go:build e2e

package e2e

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestScenario49: a classic group rolled member by member to
// group.protocol=consumer: KIP-848's online upgrade, which Kafka 4's
// default group.consumer.migration.policy (bidirectional) allows. Three
// Java consumers (range, classic) own the topic's six partitions; each in
// turn is stopped and a consumer with group.protocol=consumer started in
// its place. The broker converts the group to a consumer group when the
// first consumer-protocol member joins, and drives the classic members
// left in it by the group's epochs until the last one leaves. The
// timeline must tell one upgrade, at the point the clients show: after
// consumer-1 started and before it printed its first assignment, from the
// classic generation in which classic-3 got what it printed; complete when
// classic-3, the last classic member, closed. Each member of the mixed
// epochs carries its protocol, and what every client printed it owned
// after the conversion is one of its epochs.
func TestScenario49(t *testing.T) {
	if !kafkaAtLeast(4, 0) {
		t.Fatalf("KIP-848's online migration needs Kafka 4.0 or later; the broker is %s", kafkaVersion)
	}
	const topic, group = "migration_topic", "test_group_49"
	freshTopic(t, topic, 6, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 600)
	args := func(id, mode string) []string {
		return []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--client-id", id, "--mode", mode, "--work-ms", "50"}
	}
	classic := make([]*proc, 3)
	for i := range classic {
		id := "classic-" + strconv.Itoa(i+1)
		classic[i] = javaClient(t, id, "consume", args(id, "range")...)
		classic[i].waitFor(0, 90*time.Second, id+" assigned", func(e event) bool { return e.Name == "assigned" && len(all(e.Owned)) > 0 })
	}
	classic[2].waitFor(0, 30*time.Second, "classic-3 owning two partitions", func(e event) bool {
		return e.Name == "assigned" && len(all(e.Owned)) == 2
	})
	time.Sleep(3 * time.Second)
	consumers := make([]*proc, 3)
	for i := range consumers {
		id := "consumer-" + strconv.Itoa(i+1)
		classic[i].stop(60 * time.Second)
		consumers[i] = javaClient(t, id, "consume", args(id, "consumer")...)
		consumers[i].waitFor(0, 90*time.Second, id+" assigned", func(e event) bool { return e.Name == "assigned" && len(all(e.Owned)) > 0 })
		time.Sleep(3 * time.Second)
	}
	for _, c := range consumers {
		c.stop(60 * time.Second)
	}
	r := k.finish()
	if r == nil {
		return
	}
	g := r.group(t, group)
	if g.GroupProtocol != "consumer" || len(g.Migrations) != 1 {
		t.Fatalf("group protocol %s, migrations %+v; want consumer after one upgrade\n%s", g.GroupProtocol, g.Migrations, g.summary())
	}
	mg := g.Migrations[0]
	c1 := g.consumerMember(t, "consumer-1")
	started := consumers[0].waitFor(0, time.Second, "consumer-1 started", func(e event) bool { return e.Name == "started" })
	first := consumers[0].waitFor(0, time.Second, "consumer-1's first assignment", func(e event) bool { return e.Name == "assigned" })
	if mg.Direction != "upgrade" || mg.ConvertedBy != c1.MemberID || mg.StartedBy != c1.MemberID || mg.ConvertedAt == nil ||
		mg.ConvertedAt.Before(time.UnixMilli(started.MS)) || mg.ConvertedAt.After(time.UnixMilli(first.MS)) {
		t.Errorf("migration %+v; want an upgrade by consumer-1 (%s) between its start %s and its first assignment %s",
			mg, c1.MemberID, clockMS(started.MS), clockMS(first.MS))
	}
	// The conversion's generation: the last classic one, in which
	// classic-3 owned what it printed last before the conversion (the
	// broker may complete a classic rebalance after classic-1 left, or
	// turn it into the first epoch).
	var lastClassic *event
	for _, e := range classic[2].eventsNamed("assigned") {
		if mg.ConvertedAt != nil && time.UnixMilli(e.MS).Before(*mg.ConvertedAt) {
			lastClassic = &e
		}
	}
	if lastClassic == nil {
		t.Fatalf("classic-3 printed no assignment before the conversion (%v)", mg.ConvertedAt)
	}
	var lastGen *generation
	for i := range g.Generations {
		gen := &g.Generations[i]
		if gen.Mode == "consumer" {
			break
		}
		lastGen = gen
	}
	if lastGen == nil {
		t.Fatalf("no classic generation before the epochs\n%s", g.summary())
	}
	if m := lastGen.member("classic-3"); m == nil || !slices.Equal(all(m.Assignment), all(lastClassic.Owned)) {
		t.Errorf("the last classic generation %d does not give classic-3 %v, what it printed\n%s", lastGen.Generation, all(lastClassic.Owned), g.summary())
	}
	if mg.Generation == nil || *mg.Generation != lastGen.Generation {
		t.Errorf("migration converted at generation %v; want %d, the last classic generation", mg.Generation, lastGen.Generation)
	}
	// Complete when classic-3 left: between the revocation it printed
	// while closing and its "closed".
	c3 := g.consumerMember(t, "classic-3")
	closing := classic[2].last("revoked")
	closed := classic[2].last("closed")
	if mg.CompletedAt == nil || mg.LastMember != c3.MemberID || closing == nil || closed == nil ||
		mg.CompletedAt.Before(time.UnixMilli(closing.MS)) || mg.CompletedAt.After(time.UnixMilli(closed.MS)) {
		t.Errorf("migration completed %v by %q; want when classic-3 (%s) left, between %v and %v", mg.CompletedAt, mg.LastMember, c3.MemberID, closing, closed)
	}
	// The epochs between: classic members marked classic, consumer ones
	// consumer; classic generations before are all classic.
	mixed := false
	for _, gen := range g.Generations {
		for _, m := range gen.Members {
			want := "classic"
			if gen.Mode == "consumer" && len(m.ClientID) > 9 && m.ClientID[:9] == "consumer-" {
				want = "consumer"
			}
			if m.Protocol != want {
				t.Errorf("generation %d (%s): %s's protocol %q; want %s", gen.Generation, gen.Mode, m.ClientID, m.Protocol, want)
			}
			if m.Status == "unobserved" {
				t.Errorf("generation %d: %s unobserved, though its traffic went through kproxy", gen.Generation, m.ClientID)
			}
			if gen.Mode == "consumer" && m.Protocol == "classic" {
				mixed = true
			}
		}
	}
	if !mixed {
		t.Errorf("no group epoch lists a classic member:\n%s", g.summary())
	}
	// Every client's own view of its assignment after the conversion.
	after := mg.ConvertedAt.UnixMilli()
	for i := range consumers {
		checkOwnedInEpochs(t, g, "consumer-"+strconv.Itoa(i+1), consumers[i], after)
	}
	for i := 1; i < 3; i++ {
		checkOwnedInEpochs(t, g, "classic-"+strconv.Itoa(i+1), classic[i], after)
	}
}

// clockMS is a Unix millisecond time as a UTC clock.
func clockMS(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05.000") }
