//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestScenario60: a poll-timeout eviction of a KIP-848 member. Two Java
// consumers with group.protocol=consumer share a 2-partition topic; the
// slow one processes each batch for 8 s with max.poll.interval.ms 5 s
// (the rebalance timeout it sends in its join heartbeat): its background
// thread sends a leave heartbeat (member epoch -1) when the poll timer
// expires, and the member joins again (epoch 0, same connection) at its
// next poll, again and again. The consumer protocol carries no reason, so
// kproxy diagnose must infer poll_timeout_eviction for the slow member
// from the wire (no Fetch for about its rebalance timeout before the
// leave, then the rejoin), with its 5 s rebalance timeout, and name no
// eviction of the steady member.
func TestScenario60(t *testing.T) {
	if !kafkaAtLeast(4, 0) {
		t.Fatalf("KIP-848 (group.protocol=consumer) is generally available from Kafka 4.0; the broker is %s", kafkaVersion)
	}
	const topic, group = "poll848_topic", "test_group_60"
	freshTopic(t, topic, 2, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 2000)
	common := []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--mode", "consumer"}
	a := javaClient(t, "java-steady", "consume", append(common, "--client-id", "java-steady", "--work-ms", "200")...)
	a.waitFor(0, 90*time.Second, "steady assigned", func(e event) bool { return e.Name == "assigned" })
	slow := javaClient(t, "java-slow", "consume", append(common, "--client-id", "java-slow", "--work-ms", "8000",
		"--max-poll-interval-ms", "5000")...)
	slow.waitFor(0, 90*time.Second, "slow's first batch", func(e event) bool { return e.Name == "polled" })
	// Two poll timeouts and their rejoins: about 8 s each.
	time.Sleep(20 * time.Second)
	slow.stop(60 * time.Second)
	a.stop(60 * time.Second)
	if k.finish() == nil {
		return
	}
	fs := k.diagnose(group)
	found := 0
	for _, f := range fs {
		t.Logf("%s %v", f.Kind, f.Evidence)
		if len(f.Members) == 0 {
			continue
		}
		who := f.Members[0].ClientID
		switch {
		case f.Kind == "poll_timeout_eviction" && who == "java-slow":
			found++
			if f.Evidence["inferred"] != true {
				t.Errorf("poll_timeout_eviction of java-slow not marked inferred: %v", f.Evidence)
			}
			if rt, _ := f.Evidence["rebalanceTimeoutMs"].(float64); rt != 5000 {
				t.Errorf("rebalance timeout %v ms; want 5000 (max.poll.interval.ms, from the join heartbeat)", f.Evidence["rebalanceTimeoutMs"])
			}
			if gap, ok := f.Evidence["pollGapMs"].(float64); !ok || gap < 4500 {
				t.Errorf("poll gap %v ms; want about max.poll.interval.ms or more since the last Fetch", f.Evidence["pollGapMs"])
			}
		case (f.Kind == "poll_timeout_eviction" || f.Kind == "session_timeout_eviction") && who == "java-steady":
			t.Errorf("%s of the steady member: %v", f.Kind, f.Evidence)
		}
	}
	if found == 0 {
		t.Fatalf("no poll_timeout_eviction of java-slow among %d findings", len(fs))
	}
}
