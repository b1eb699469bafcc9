//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestScenario47: a poll-timeout eviction named for a client that sends
// no reason. kafka-python (LeaveGroup v3 at most, no KIP-800 reason) B
// processes each record for 14 s with max_poll_interval_ms 10 s: its
// heartbeat thread leaves the group when the poll timer expires, and B
// rejoins at its next poll, again and again, beside a healthy A. kproxy
// diagnose must name poll_timeout_eviction for B, inferred from the wire
// (no Fetch for about the rebalance timeout, then a rejoin from the same
// connection), not only rebalance_loop.
func TestScenario47(t *testing.T) {
	const topic, group = "slow_poll_topic", "test_group_47"
	freshTopic(t, topic, 2, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 200)
	common := []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--session-ms", "6000", "--max-poll-interval-ms", "10000"}
	a := kafkaPython(t, "consumer-A", append(common, "--client-id", "consumer-A", "--work-ms", "100")...)
	b := kafkaPython(t, "consumer-B", append(common, "--client-id", "consumer-B", "--work-ms", "14000", "--max-poll-records", "1")...)
	b.waitFor(0, 60*time.Second, "B's first record", func(e event) bool { return e.Name == "polled" })
	// Two poll timeouts and their rejoins: 14 s each.
	time.Sleep(40 * time.Second)
	b.stop(60 * time.Second)
	a.stop(60 * time.Second)
	if k.finish() == nil {
		return
	}
	fs := k.diagnose(group)
	found := 0
	for _, f := range fs {
		t.Logf("%s %v", f.Kind, f.Evidence)
		if f.Kind == "poll_timeout_eviction" && len(f.Members) > 0 && f.Members[0].ClientID == "consumer-B" {
			found++
			if f.Evidence["inferred"] != true {
				t.Errorf("poll_timeout_eviction of B not marked inferred: %v", f.Evidence)
			}
		}
		if f.Kind == "poll_timeout_eviction" && len(f.Members) > 0 && f.Members[0].ClientID == "consumer-A" {
			t.Errorf("poll_timeout_eviction of the healthy A: %v", f.Evidence)
		}
	}
	if found == 0 {
		t.Fatalf("no poll_timeout_eviction of consumer-B among %d findings", len(fs))
	}
}
