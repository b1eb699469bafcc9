//go:build e2e

package e2e

import (
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestScenario42: scenario 1's kafka-python story, then B frozen with
// SIGSTOP past its 10 s session timeout. kproxy diagnose names B's
// eviction by session timeout, linked to the warning raised at two thirds
// of it. A commits what it processed from on_partitions_revoked, so the
// handover of round_topic 2 re-processes nothing: no duplicate_window (its
// last Fetch request of the partition asked from below that commit).
func TestScenario42(t *testing.T) {
	const topic, group = "round_topic", "test_group_42"
	freshTopic(t, topic, 3, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 600)

	common := []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--max-poll-records", "10"}
	a := kafkaPython(t, "consumer-A", append(common, "--client-id", "consumer-A", "--work-ms", "2000")...)
	a.waitFor(0, 60*time.Second, "A owning round_topic 0,1,2", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1, 2))
	})
	a.waitFor(0, 30*time.Second, "A's first batch", func(e event) bool { return e.Name == "polled" })
	b := kafkaPython(t, "consumer-B", append(common, "--client-id", "consumer-B", "--work-ms", "500")...)
	b.waitFor(0, 60*time.Second, "B owning round_topic 2", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 2))
	})
	b.waitFor(0, 30*time.Second, "B's first batch", func(e event) bool { return e.Name == "polled" })

	markA := a.mark()
	b.signal(syscall.SIGSTOP)
	a.waitFor(markA, 60*time.Second, "A owning round_topic 0,1,2 again, B evicted", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1, 2))
	})
	b.signal(syscall.SIGCONT)
	time.Sleep(5 * time.Second)
	b.stop(60 * time.Second)
	a.stop(60 * time.Second)
	if k.finish() == nil {
		return
	}

	fs := k.diagnose(group)
	var eviction *finding
	warnings := map[string]bool{}
	for i := range fs {
		switch fs[i].Kind {
		case "duplicate_window":
			t.Errorf("duplicate_window although A committed on revocation: %+v", fs[i].Evidence)
		case "session_timeout_eviction":
			if eviction == nil {
				eviction = &fs[i]
			}
		case "session_timeout_warning":
			warnings[fs[i].ID] = true
		}
	}
	if eviction == nil {
		t.Fatalf("no session_timeout_eviction among %+v", fs)
	}
	if len(eviction.Links) == 0 || !warnings[eviction.Links[0]] {
		t.Errorf("the eviction links %v; want the session_timeout_warning before it (warnings %v)", eviction.Links, warnings)
	}
}
