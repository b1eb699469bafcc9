//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestScenario43: a Java consumer whose processing of a batch (8 s) takes
// longer than its max.poll.interval.ms (5 s): its heartbeat thread leaves
// the group with KIP-800's reason "consumer poll timeout has expired.".
// kproxy diagnose names it (poll_timeout_eviction, with the reason, its
// rebalance timeout of 5 s, and the gap since its last Fetch).
func TestScenario43(t *testing.T) {
	const topic, group = "poll_topic", "test_group_43"
	freshTopic(t, topic, 2, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 2000)

	common := []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--mode", "range"}
	a := javaClient(t, "java-steady", "consume", append(common, "--client-id", "java-steady", "--work-ms", "500")...)
	a.waitFor(0, 90*time.Second, "steady assigned", func(e event) bool { return e.Name == "assigned" })
	slow := javaClient(t, "java-slow", "consume", append(common, "--client-id", "java-slow", "--work-ms", "8000",
		"--max-poll-interval-ms", "5000")...)
	slow.waitFor(0, 90*time.Second, "slow's first batch", func(e event) bool { return e.Name == "polled" })
	mark := a.mark()
	a.waitFor(mark, 60*time.Second, "steady reassigned after slow's poll timeout", func(e event) bool { return e.Name == "assigned" })
	time.Sleep(3 * time.Second)
	slow.stop(60 * time.Second)
	a.stop(60 * time.Second)
	if k.finish() == nil {
		return
	}

	var f *finding
	fs := k.diagnose(group)
	for i := range fs {
		if fs[i].Kind == "poll_timeout_eviction" && f == nil {
			f = &fs[i]
		}
	}
	if f == nil {
		t.Fatalf("no poll_timeout_eviction among %+v", fs)
	}
	if r, _ := f.Evidence["reason"].(string); r != "consumer poll timeout has expired." {
		t.Errorf("eviction reason %q; want the Java client's KIP-800 reason", r)
	}
	if rt, _ := f.Evidence["rebalanceTimeoutMs"].(float64); rt != 5000 {
		t.Errorf("rebalance timeout %v ms; want 5000 (max.poll.interval.ms)", f.Evidence["rebalanceTimeoutMs"])
	}
	if gap, ok := f.Evidence["pollGapMs"].(float64); !ok || gap < 4000 {
		t.Errorf("poll gap %v ms; want about max.poll.interval.ms or more since the last Fetch", f.Evidence["pollGapMs"])
	}
}
