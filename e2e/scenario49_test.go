//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	t.Run("upgrade", scenario49Upgrade)
	t.Run("downgrade", scenario49Downgrade)
}

// scenario49Upgrade rolls a classic group to the consumer protocol.
func scenario49Upgrade(t *testing.T) {
	const topic, group = "migration_topic", "test_group_49"
	freshTopic(t, topic, 6, group)
	k := startKproxyWith(t, true, brokerAddr, append(migrationRetain, "--admin", proxyAdmin)...)
	bs := bootstrap(k)
	feed(t, bs, topic, 600)
	args := func(id, mode string) []string {
		return []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--client-id", id, "--mode", mode, "--work-ms", "50"}
	}
	classic := migrationMembers(t, "classic", "range", nil, args)
	classic[2].waitFor(0, 30*time.Second, "classic-3 owning two partitions", func(e event) bool {
		return e.Name == "assigned" && len(all(e.Owned)) == 2
	})
	time.Sleep(3 * time.Second)
	consumers := migrationMembers(t, "consumer", "consumer", classic, args)
	g, mg := finishMigration(t, k, group, "consumer")
	if g == nil {
		return
	}
	c1 := g.consumerMember(t, "consumer-1")
	started := consumers[0].waitFor(0, time.Second, "consumer-1 started", func(e event) bool { return e.Name == "started" })
	first := consumers[0].waitFor(0, time.Second, "consumer-1's first assignment", func(e event) bool { return e.Name == "assigned" })
	if mg.Direction != "upgrade" || mg.ConvertedBy != c1.MemberID || mg.StartedBy != c1.MemberID || mg.ConvertedAt == nil ||
		mg.ConvertedAt.Before(time.UnixMilli(started.MS)) || mg.ConvertedAt.After(time.UnixMilli(first.MS)) {
		t.Errorf("migration %+v; want an upgrade by consumer-1 (%s) between its start %s and its first assignment %s",
			mg, c1.MemberID, clockMS(started.MS), clockMS(first.MS))
	}
	// The conversion's generation: the last classic one. Depending on
	// when consumer-1 joins, the broker completes the classic rebalance
	// classic-1's leaving started, or converts the group in its join or
	// sync phase; either way the last stable classic generation gave
	// classic-3 what it printed last before the conversion.
	var lastClassic *event
	for _, e := range classic[2].eventsNamed("assigned") {
		if mg.ConvertedAt != nil && time.UnixMilli(e.MS).Before(*mg.ConvertedAt) {
			lastClassic = &e
		}
	}
	if lastClassic == nil {
		t.Fatalf("classic-3 printed no assignment before the conversion (%v)", mg.ConvertedAt)
	}
	var lastGen, lastStable *generation
	for i := range g.Generations {
		gen := &g.Generations[i]
		if gen.Mode == "consumer" {
			break
		}
		lastGen = gen
		if gen.Status == "stable" {
			lastStable = gen
		}
	}
	if lastGen == nil || lastStable == nil {
		t.Fatalf("no stable classic generation before the epochs\n%s", g.summary())
	}
	if m := lastStable.member("classic-3"); m == nil || !slices.Equal(all(m.Assignment), all(lastClassic.Owned)) {
		t.Errorf("the last stable classic generation %d does not give classic-3 %v, what it printed\n%s", lastStable.Generation, all(lastClassic.Owned), g.summary())
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
		checkOwnedInEpochs(t, g, "consumer-"+strconv.Itoa(i+1), consumers[i], after, 0)
	}
	for i := 1; i < 3; i++ {
		checkOwnedInEpochs(t, g, "classic-"+strconv.Itoa(i+1), classic[i], after, 0)
	}
	// classic-3 stayed through the mixed epochs: each rejoin the broker
	// asked of it is told, and its range assignor's stop.
	text := replayText(t, k)
	if want := c3.MemberID + " (client classic-3 "; !strings.Contains(text, want) ||
		!regexp.MustCompile(regexp.QuoteMeta(want)+`[^\n]*\) rejoined with the classic protocol to reconcile \(epoch \d+\), JoinGroup held [^\n]*; its assignor range is eager: it stopped consuming`).MatchString(text) {
		t.Errorf("the text timeline tells no rejoin of classic-3 (%s) to reconcile with an epoch", c3.MemberID)
	}
}

// migrationMembers starts three Java consumers named prefix-1..3 in mode,
// each once it is assigned partitions. With old, a roll: each replaces
// old[i], stopped first, and is given 3 s before the next; once all three
// are in, they are stopped too, and the group is left empty.
func migrationMembers(t *testing.T, prefix, mode string, old []*proc, args func(id, mode string) []string) []*proc {
	t.Helper()
	ps := make([]*proc, 3)
	for i := range ps {
		id := prefix + "-" + strconv.Itoa(i+1)
		if old != nil {
			old[i].stop(60 * time.Second)
		}
		ps[i] = javaClient(t, id, "consume", args(id, mode)...)
		ps[i].waitFor(0, 90*time.Second, id+" assigned", func(e event) bool { return e.Name == "assigned" && len(all(e.Owned)) > 0 })
		if old != nil {
			time.Sleep(3 * time.Second)
		}
	}
	if old != nil {
		for _, p := range ps {
			p.stop(60 * time.Second)
		}
	}
	return ps
}

// finishMigration reads the live page once the group's migration is
// complete, stops k and returns the group's report and its one migration,
// which must have left the group with protocol (else the test stops), its
// pages checked (checkMigrationPages); nil when k keeps no journal.
func finishMigration(t *testing.T, k *kproxy, group, protocol string) (*groupReport, migration) {
	t.Helper()
	live := migrationLive(t, group)
	r := k.finish()
	if r == nil {
		return nil, migration{}
	}
	g := r.group(t, group)
	if g.GroupProtocol != protocol || len(g.Migrations) != 1 {
		t.Fatalf("group protocol %s, migrations %+v; want %s after one migration\n%s", g.GroupProtocol, g.Migrations, protocol, g.summary())
	}
	mg := g.Migrations[0]
	checkMigrationPages(t, k, group, mg, live)
	return g, mg
}

// migrationLive is what the live web page says of group's migrations
// (#migrations), once the live report has its migration complete.
func migrationLive(t *testing.T, group string) []string {
	t.Helper()
	waitLiveGroup(t, group, "the migration's end", func(g *groupReport) bool {
		return len(g.Migrations) == 1 && g.Migrations[0].CompletedAt != nil
	})
	return onPage(t, "migration-live", "http://"+proxyAdmin+"/", group, migrationReady, migrationRead)
}

// The group page's migration sentences.
const (
	migrationReady = `document.getElementById('migrations') !== null`
	migrationRead  = `document.getElementById('migrations').innerText.split('\n')`
)

// checkMigrationPages checks that the live page (live, read while kproxy
// ran) and replay --format html's page tell migration mg of group: its
// direction, the generation where the group changed type and the last
// member of the old protocol.
func checkMigrationPages(t *testing.T, k *kproxy, group string, mg migration, live []string) {
	t.Helper()
	htmlFile := filepath.Join(runDir(t), "timeline.html")
	runKproxyCmd(t, "replay", k.journal, "--format", "html", "--output", htmlFile)
	file := onPage(t, "migration-file", "file://"+htmlFile+"#/", group, migrationReady, migrationRead)
	want := []string{"online upgrade to the consumer protocol", "(last classic member " + mg.LastMember + " gone)"}
	if mg.Direction == "downgrade" {
		want = []string{"online downgrade to the classic protocol", "(last consumer-protocol member " + mg.LastMember + " gone)"}
	}
	if mg.Generation != nil {
		want = append(want, fmt.Sprintf("group type changed %s at generation %d", clockMS(mg.ConvertedAt.UnixMilli()), *mg.Generation))
	}
	for name, lines := range map[string][]string{"live": live, "replay --format html": file} {
		if len(lines) != 1 {
			t.Errorf("%s page: migrations %q; want one", name, lines)
			continue
		}
		for _, w := range want {
			if !strings.Contains(lines[0], w) {
				t.Errorf("%s page: migration %q lacks %q", name, lines[0], w)
			}
		}
	}
}

// replayText is the text timeline of k's journal, kept in the run
// directory as timeline.txt.
func replayText(t *testing.T, k *kproxy) string {
	t.Helper()
	text, _ := runKproxyCmd(t, "replay", k.journal, "--format", "text")
	if err := os.WriteFile(filepath.Join(runDir(t), "timeline.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// scenario49Downgrade is the upgrade the other way: three Java consumers
// with group.protocol=consumer rolled member by member back to the
// classic protocol (range).
func scenario49Downgrade(t *testing.T) {
	const topic, group = "downgrade_topic", "test_group_49_down"
	freshTopic(t, topic, 6, group)
	k := startKproxyWith(t, true, brokerAddr, append(migrationRetain, "--admin", proxyAdmin)...)
	bs := bootstrap(k)
	feed(t, bs, topic, 600)
	args := func(id, mode string) []string {
		return []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--client-id", id, "--mode", mode, "--work-ms", "50"}
	}
	consumers := migrationMembers(t, "consumer", "consumer", nil, args)
	time.Sleep(3 * time.Second)
	classic := migrationMembers(t, "classic", "range", consumers, args)
	g, mg := finishMigration(t, k, group, "classic")
	if g == nil {
		return
	}
	// Started by classic-1's join, between its start and its first
	// assignment; converted when consumer-3, the last consumer-protocol
	// member, left: between the revocation it printed while closing and
	// its "closed".
	c1 := g.consumerMember(t, "classic-1")
	started := classic[0].last("started")
	first := classic[0].eventsNamed("assigned")[0]
	if mg.Direction != "downgrade" || mg.StartedBy != c1.MemberID || started == nil ||
		mg.StartedAt.Before(time.UnixMilli(started.MS)) || mg.StartedAt.After(time.UnixMilli(first.MS)) {
		t.Errorf("migration %+v; want a downgrade started by classic-1 (%s) between %s and %s", mg, c1.MemberID, clockMS(started.MS), clockMS(first.MS))
	}
	m3 := g.consumerMember(t, "consumer-3")
	closing, closed := consumers[2].last("revoked"), consumers[2].last("closed")
	if mg.ConvertedAt == nil || mg.ConvertedBy != m3.MemberID || mg.LastMember != m3.MemberID || closing == nil || closed == nil ||
		mg.ConvertedAt.Before(time.UnixMilli(closing.MS)) || mg.ConvertedAt.After(time.UnixMilli(closed.MS)) ||
		mg.CompletedAt == nil || !mg.CompletedAt.Equal(*mg.ConvertedAt) {
		t.Errorf("migration %+v; want converted and complete when consumer-3 (%s) left, between %v and %v", mg, m3.MemberID, closing, closed)
	}
	// Before the conversion, every client's printed assignment is one of
	// its epochs, classic-1's and classic-2's included; after it, the
	// classic members rebalance as a classic group: the first generation
	// after the conversion has a leader, and gives each member what it
	// printed next.
	conv := mg.ConvertedAt.UnixMilli()
	for i := range consumers {
		checkOwnedInEpochs(t, g, "consumer-"+strconv.Itoa(i+1), consumers[i], 0, 0)
	}
	for i := 0; i < 2; i++ {
		checkOwnedInEpochs(t, g, "classic-"+strconv.Itoa(i+1), classic[i], 0, conv)
	}
	var next *generation
	for i := range g.Generations {
		if gen := &g.Generations[i]; mg.Generation != nil && gen.Generation > *mg.Generation {
			next = gen
			break
		}
	}
	if next == nil || next.Mode == "consumer" || next.Leader == "" {
		t.Fatalf("no classic generation with a leader after the conversion at generation %v\n%s", mg.Generation, g.summary())
	}
	for i := 0; i < 2; i++ {
		id := "classic-" + strconv.Itoa(i+1)
		var printed *event
		for _, e := range classic[i].eventsNamed("assigned") {
			if e.MS >= conv {
				printed = &e
				break
			}
		}
		m := next.member(id)
		if printed == nil || m == nil || m.Protocol != "classic" || !slices.Equal(all(m.Assignment), all(printed.Owned)) {
			t.Errorf("generation %d gives %s %+v; it printed %v", next.Generation, id, m, printed)
		}
	}
	// The classic generation continues the group epochs: nothing between
	// them went unseen.
	if next.Generation != *mg.Generation+1 {
		t.Errorf("first classic generation %d after the conversion at epoch %d; want the next", next.Generation, *mg.Generation)
	}
	if text := replayText(t, k); strings.Contains(text, "not observed") {
		t.Errorf("the text timeline says something was not observed, though every exchange went through kproxy (%s)", filepath.Join(runDir(t), "timeline.txt"))
	}
}

// migrationRetain keeps every generation of a migration's roll in the
// live report: serve keeps 10 per group by default, and a roll of three
// members makes 10 or 11 (classic members joining one by one or together),
// so the live report would drop the oldest where replay keeps it.
var migrationRetain = []string{"--timeline-retain", "100,24h"}

// clockMS is a Unix millisecond time as a UTC clock.
func clockMS(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05.000") }
