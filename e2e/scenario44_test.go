//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScenario44: the seed's kafka-python consumers, with the seed's bug
// (--seed-bug: an offsets dict never pruned, committed whole from
// on_partitions_revoked). A owns round_topic 0,1,2; B joins and takes 2
// and reads it to the end; B leaves (committing its position of 2), and
// A's revocation commits again the offset of 2 it kept from before the
// handover, while B still owns 2 in that generation. kproxy diagnose names
// A's stale_owner_commit of partition 2, and the duplicate_window of the
// handover of 2 back to A: A resumes from its own stale commit, so it
// processes again the records B had read, B's last position minus A's
// stale offset.
func TestScenario44(t *testing.T) {
	const topic, group = "round_topic", "test_group_44"
	freshTopic(t, topic, 3, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 300)

	common := []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--max-poll-records", "10", "--seed-bug"}
	a := kafkaPython(t, "consumer-A", append(common, "--client-id", "consumer-A", "--work-ms", "1000")...)
	a.waitFor(0, 60*time.Second, "A owning round_topic 0,1,2", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1, 2))
	})
	a.waitFor(0, 30*time.Second, "A's batch of round_topic 2", func(e event) bool {
		return e.Name == "polled" && slices.Contains(e.Partitions[topic], 2)
	})

	markA := a.mark()
	b := kafkaPython(t, "consumer-B", append(common, "--client-id", "consumer-B", "--work-ms", "20")...)
	first := a.waitFor(markA, 60*time.Second, "A's commit from on_partitions_revoked as B joins", func(e event) bool {
		return e.Name == "commit"
	})
	if first.Error != "" {
		t.Fatalf("A's commit as B joined failed: %s", first)
	}
	old, ok := first.Offsets[topic]["2"]
	if !ok {
		t.Fatalf("A's commit as B joined has no round_topic 2: %s", first)
	}
	b.waitFor(0, 60*time.Second, "B owning round_topic 2", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 2))
	})
	b.waitFor(0, 30*time.Second, "B's first batch", func(e event) bool { return e.Name == "polled" })
	// B reads round_topic 2 to its end: no batch for 1.5 s.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		evs := b.snapshot()
		lastPoll := int64(0)
		for _, e := range evs {
			if e.Name == "polled" {
				lastPoll = e.MS
			}
		}
		if time.Now().UnixMilli()-lastPoll > 1500 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still reading round_topic 2 after 30 s")
		}
	}

	markA, markB := a.mark(), b.mark()
	b.stop(60 * time.Second)
	last := b.waitFor(markB, time.Second, "B's commit on close", func(e event) bool { return e.Name == "commit" })
	pos, ok := last.Offsets[topic]["2"]
	if last.Error != "" || !ok {
		t.Fatalf("B's commit on close: %s", last)
	}
	stale := a.waitFor(markA, 30*time.Second, "A's commit from on_partitions_revoked as B leaves", func(e event) bool {
		return e.Name == "commit"
	})
	if stale.Offsets[topic]["2"] != old || stale.Error != "" {
		t.Fatalf("A's commit as B left: %s; want round_topic 2 at %d again, accepted", stale, old)
	}
	a.waitFor(markA, 30*time.Second, "A owning round_topic 0,1,2 again", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1, 2))
	})
	a.waitFor(markA, 30*time.Second, "A reading round_topic 2 again", func(e event) bool {
		return e.Name == "polled" && slices.Contains(e.Partitions[topic], 2)
	})
	a.stop(60 * time.Second)
	if k.finish() == nil {
		return
	}
	t.Logf("A committed round_topic 2 at %d before the handover and again after it; B's position was %d", old, pos)

	fs := k.diagnose(group)
	var staleF, dup *finding
	for i := range fs {
		f := &fs[i]
		switch f.Kind {
		case "stale_owner_commit":
			if staleF == nil && f.member("consumer-A") != "" && strings.Contains(f.ID, f.member("consumer-A")) &&
				f.Evidence["owner"] == f.member("consumer-B") && slices.Contains(f.Partitions[topic], 2) {
				staleF = f
			}
		case "duplicate_window":
			if dup == nil && slices.Contains(f.Partitions[topic], 2) {
				dup = f
			}
		}
	}
	if staleF == nil {
		t.Fatalf("no stale_owner_commit by consumer-A of %s[2] owned by consumer-B among %+v", topic, fs)
	}
	if got := num(staleF.Evidence["offset"]); got != old {
		t.Errorf("stale_owner_commit offset %d; A committed %d", got, old)
	}
	if dup == nil {
		t.Fatalf("no duplicate_window on %s[2] among %+v", topic, fs)
	}
	t.Logf("stale_owner_commit %+v; duplicate_window %+v", staleF.Evidence, dup.Evidence)
	if b := dup.member("consumer-B"); b == "" || !strings.Contains(dup.ID, b) || dup.member("consumer-A") == "" {
		t.Errorf("duplicate_window %s (members %+v); want the handover from consumer-B to consumer-A", dup.ID, dup.Members)
	}
	bp, _ := dup.Evidence["byPartition"].(map[string]any)
	p2, _ := bp[topic+"[2]"].(map[string]any)
	if got, want := num(p2["records"]), pos-old; got != want {
		t.Errorf("duplicate_window on %s[2]: %d records; B read to %d and A resumed from its stale %d: want %d", topic, got, pos, old, want)
	}
}

// member is the member id of the finding's member with clientID, or "".
func (f *finding) member(clientID string) string {
	for _, m := range f.Members {
		if m.ClientID == clientID {
			return m.MemberID
		}
	}
	return ""
}

// num is a JSON number of the evidence as an int64 (-1 when absent).
func num(v any) int64 {
	if f, ok := v.(float64); ok {
		return int64(f)
	}
	return -1
}
