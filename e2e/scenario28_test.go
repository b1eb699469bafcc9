//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScenario28: two Java KafkaShareConsumers (KIP-932, ShareMember) in one
// share group, share.auto.offset.reset=earliest set on the group as an
// operator would, subscribe to a four-partition topic; once the broker has
// assigned partitions to both, 1,000 records are written. Every record must
// be delivered once, to one of the two (a record delivered again, to either,
// shows twice), accepted, and its acknowledgement committed without error;
// both members must have received records. Run directly and through kproxy:
// both runs must deliver the same records. (A share group promises no
// order, so the records of a partition are compared by offset.)
func TestScenario28(t *testing.T) {
	const n = 1000
	direct, proxied, ok := bothWays(t, func(t *testing.T, l *leg) map[int32][]string {
		topic, group := "share_topic_"+l.name, "share_group_28_"+l.name
		freshTopic(t, topic, 4, group)
		setGroupConfig(t, group, "share.auto.offset.reset", "earliest")
		args := func(id string) []string {
			return []string{"--bootstrap", l.bs, "--group", group, "--topic", topic, "--client-id", id}
		}
		a := l.client(javaClient(t, "share-A", "share", args("share-A")...))
		b := l.client(javaClient(t, "share-B", "share", args("share-B")...))

		// Both members hold partitions before the first record exists, so
		// that neither can take them all.
		waitShareAssigned(t, group, topic, 2, a, b)
		produceDirect(t, topic, n, func(i int) (string, string) {
			return fmt.Sprintf("k%d", i), fmt.Sprintf("share-record-%d", i)
		})
		log := readBack(t, topic, false)

		// Until every record is acknowledged.
		acked := func(p *proc) int64 {
			var sum int64
			for _, e := range p.snapshot() {
				if e.Name == "acked" {
					sum += e.Count
				}
			}
			return sum
		}
		deadline := time.Now().Add(60 * time.Second)
		for acked(a)+acked(b) < n {
			failOnExit(t, a, b)
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d records acknowledged within 60 s\n%s\n%s", acked(a)+acked(b), n, a.tail(), b.tail())
			}
			time.Sleep(200 * time.Millisecond)
		}
		a.stop(60 * time.Second)
		b.stop(60 * time.Second)

		for _, p := range []*proc{a, b} {
			for _, e := range p.snapshot() {
				if e.Name == "acked" && e.Error != "" {
					t.Errorf("%s: committing acknowledgements failed: %s", p.name, e)
				}
			}
		}
		got := recordEvents(a, b)
		for _, rs := range got {
			slices.SortFunc(rs, func(x, y rec) int { return int(x.Offset - y.Offset) })
		}
		if d := diffPartitions(got.values(), log.values()); d != "" {
			t.Errorf("the members received %d records; the topic holds %d, each to be delivered once:\n%s", got.count(), log.count(), d)
		}
		na, nb := recordEvents(a).count(), recordEvents(b).count()
		if na == 0 || nb == 0 {
			t.Errorf("share-A received %d records, share-B %d; want both to have received some", na, nb)
		}
		t.Logf("%s: %d records; share-A received and accepted %d, share-B %d", l.name, n, na, nb)
		l.check(t)
		return got.values()
	})
	if ok {
		if d := diffPartitions(proxied, direct); d != "" {
			t.Errorf("through kproxy the share group received other records than directly:\n%s", d)
		}
	}
}

// waitShareAssigned waits until n members of the share group hold
// partitions of topic, as the broker describes the group, failing the test
// after 60 s or when one of ps exits.
func waitShareAssigned(t *testing.T, group, topic string, n int, ps ...*proc) {
	t.Helper()
	adm := admin(t)
	deadline := time.Now().Add(60 * time.Second)
	for {
		failOnExit(t, ps...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		gs, err := adm.DescribeShareGroups(ctx, group)
		cancel()
		g, found := gs[group]
		assigned := 0
		for _, m := range g.Members {
			if len(m.Assignment[topic]) > 0 {
				assigned++
			}
		}
		if err == nil && found && g.Err == nil && assigned == n {
			return
		}
		if time.Now().After(deadline) {
			var tails strings.Builder
			for _, p := range ps {
				tails.WriteString(p.tail())
			}
			t.Fatalf("share group %s: not %d members with partitions within 60 s (%+v, %v)\n%s", group, n, g, err, tails.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
}
