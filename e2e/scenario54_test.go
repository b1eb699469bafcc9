//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScenario54: a KIP-848 member that goes silent. Two Java consumers
// with group.protocol=consumer share a 4-partition topic; B is killed
// (SIGKILL: no leave) and the broker removes it once its session times out
// (broker.sh sets group.consumer.session.timeout.ms=10000 and a 1 s
// heartbeat interval), bumping the group epoch so that A takes B's
// partitions. The consumer protocol's session timeout is a broker setting,
// not on the wire: the timeline must infer it from B's silence, as the
// epoch's trigger (session_timeout of B, not "cause not observed"), with
// bounds that hold the broker's 10 s, and B departed by session timeout;
// A's printed assignment after it is the epoch's. kproxy diagnose names
// session_timeout_eviction of B (inferred, with the bounds), and no
// rebalance_loop.
func TestScenario54(t *testing.T) {
	if !kafkaAtLeast(4, 0) {
		t.Fatalf("KIP-848 (group.protocol=consumer) is generally available from Kafka 4.0; the broker is %s", kafkaVersion)
	}
	const topic, group = "silent_topic", "test_group_54"
	freshTopic(t, topic, 4, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 400)
	args := func(id string) []string {
		return []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--client-id", id, "--mode", "consumer", "--work-ms", "50"}
	}
	a := javaClient(t, "java-A", "consume", args("java-A")...)
	a.waitFor(0, 90*time.Second, "A owning 0-3", func(e event) bool { return e.Name == "assigned" && len(all(e.Owned)) == 4 })
	b := javaClient(t, "java-B", "consume", args("java-B")...)
	b.waitFor(0, 90*time.Second, "B owning two partitions", func(e event) bool { return e.Name == "assigned" && len(all(e.Owned)) == 2 })
	time.Sleep(2 * time.Second)
	markA := a.mark()
	killed := time.Now()
	b.kill()
	back := a.waitFor(markA, 40*time.Second, "A owning 0-3 again", func(e event) bool { return e.Name == "assigned" && len(all(e.Owned)) == 4 })
	t.Logf("A took B's partitions back %.1f s after B was killed", time.UnixMilli(back.MS).Sub(killed).Seconds())
	time.Sleep(2 * time.Second)
	a.stop(60 * time.Second)
	r := k.finish()
	if r == nil {
		return
	}
	g := r.group(t, group)
	mb := g.consumerMember(t, "java-B")
	var timedOut *generation
	for i := range g.Generations {
		if tr := g.Generations[i].Trigger; tr.Kind == "session_timeout" && tr.Member == mb.MemberID {
			timedOut = &g.Generations[i]
		}
	}
	if timedOut == nil {
		t.Fatalf("no group epoch triggered by java-B's session timeout (%s)\n%s", mb.MemberID, g.summary())
	}
	reason := timedOut.Trigger.Reason
	if !strings.Contains(reason, "heartbeat interval 1 s") || !boundsHold(reason, 10) {
		t.Errorf("epoch %d trigger reason %q; want B's silence, with bounds that hold the broker's 10 s session timeout", timedOut.Generation, reason)
	}
	departed := false
	for _, d := range timedOut.Departed {
		if d.MemberID == mb.MemberID && d.How == "session_timeout" {
			departed = true
		}
	}
	if !departed {
		t.Errorf("epoch %d departed %+v; want java-B by session_timeout", timedOut.Generation, timedOut.Departed)
	}
	if m := timedOut.member("java-A"); m == nil || !slices.Equal(all(m.Assignment), all(back.Owned)) {
		t.Errorf("epoch %d gives java-A %v; java-A printed %v", timedOut.Generation, m, all(back.Owned))
	}
	// The diagnosis names B's session timeout, with the bounds inferred,
	// and nothing worse: one expiry is no rebalance loop, and A did
	// nothing wrong.
	evicted := false
	for _, f := range k.diagnose(group) {
		t.Logf("%s %v", f.Kind, f.Evidence)
		switch {
		case f.Kind == "session_timeout_eviction" && len(f.Members) > 0 && f.Members[0].ClientID == "java-B":
			evicted = true
			hi, _ := f.Evidence["sessionTimeoutAtMostMs"].(float64)
			if f.Evidence["inferred"] != true || hi < 10000 {
				t.Errorf("session_timeout_eviction of java-B: evidence %v; want inferred, at most ≥ 10000 ms", f.Evidence)
			}
		case f.Kind == "rebalance_loop":
			t.Errorf("rebalance_loop for one session timeout: %v", f.Evidence)
		case len(f.Members) > 0 && f.Members[0].ClientID == "java-A":
			t.Errorf("%s of the healthy java-A: %v", f.Kind, f.Evidence)
		}
	}
	if !evicted {
		t.Errorf("no session_timeout_eviction of java-B")
	}
}

// boundsHold reports whether the inferred session timeout in reason
// ("... a session timeout of between 9.02 s and 10.98 s", or "at most
// 10.98 s") holds secs seconds.
func boundsHold(reason string, secs float64) bool {
	i := strings.Index(reason, "session timeout of ")
	if i < 0 {
		return false
	}
	var lo, hi float64
	rest := reason[i+len("session timeout of "):]
	if n, _ := fmt.Sscanf(rest, "between %g s and %g s", &lo, &hi); n == 2 {
		return lo <= secs && secs <= hi
	}
	if n, _ := fmt.Sscanf(rest, "at most %g s", &hi); n == 1 {
		return secs <= hi
	}
	return false
}
