//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestScenario61: KIP-848 members joining one after another are no
// rebalance loop. Four Java consumers with group.protocol=consumer join a
// 4-partition topic a second apart, each join bumping the group epoch and
// moving partitions to the newcomer, and consume for 20 s. The timeline
// counts the epochs as a storm; kproxy diagnose, up to the moment the
// consumers are stopped (the shutdown is four departures: a real cost),
// must find no rebalance_loop and no warning or critical finding at all:
// an epoch bump is not a stop-the-world rebalance.
func TestScenario61(t *testing.T) {
	if !kafkaAtLeast(4, 0) {
		t.Fatalf("KIP-848 (group.protocol=consumer) is generally available from Kafka 4.0; the broker is %s", kafkaVersion)
	}
	const topic, group = "joins848_topic", "test_group_61"
	freshTopic(t, topic, 4, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 4000)
	var cs []*proc
	for i := range 4 {
		id := fmt.Sprintf("java-%d", i)
		cs = append(cs, javaClient(t, id, "consume", "--bootstrap", bs, "--group", group, "--topic", topic,
			"--client-id", id, "--mode", "consumer", "--work-ms", "100"))
		time.Sleep(time.Second)
	}
	for i, c := range cs {
		c.waitFor(0, 90*time.Second, fmt.Sprintf("java-%d assigned", i), func(e event) bool { return e.Name == "assigned" && len(all(e.Owned)) > 0 })
	}
	time.Sleep(20 * time.Second)
	until := time.Now().UTC()
	for _, c := range cs {
		c.stop(60 * time.Second)
	}
	r := k.finish()
	if r == nil {
		return
	}
	g := r.group(t, group)
	t.Logf("%d group epochs, %d storms", len(g.Generations), len(g.Storms))
	for _, f := range k.diagnose(group, "--until", until.Format(time.RFC3339Nano)) {
		t.Logf("%s %s %v", f.Kind, f.Severity, f.Evidence)
		if f.Kind == "rebalance_loop" || f.Severity == "warning" || f.Severity == "critical" {
			t.Errorf("%s (%s) for members that only joined one after another: %v", f.Kind, f.Severity, f.Evidence)
		}
	}
}
