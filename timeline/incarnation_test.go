package timeline

import (
	"slices"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestGenerationBackwards: a group's generation going back (the coordinator
// lost its state and the group was re-created) starts a separate history
// with a note, instead of folding the new generation 1 into the old one;
// a late JoinGroup answer for an older generation of the same history does
// not.
func TestGenerationBackwards(t *testing.T) {
	a, b := client{"consumer-A", "10.0.0.1:5000"}, client{"consumer-B", "10.0.0.2:5000"}
	tests := []struct {
		name string
		// script builds the events after generation 2 (A and B) formed
		// and became stable by 20 s.
		script          func(s *script)
		wantRecreated   int
		wantHistories   int
		wantLastGens    []int32 // generations of the last history
		wantCommitLines int     // commit entries (during revocation, failed)
	}{
		{"recreated_at_generation_1", func(s *script) {
			s.join(a, 30, 30.1, jg("A2", 1, "A2", "A2"))
			s.sync(a, 30.2, 30.3, "A2", 1, tp("t", 0, 1, 2), map[string][]decode.TopicPartitions{"A2": tp("t", 0, 1, 2)})
			s.commit(a, 35, 35.01, "A2", 1, "t", map[int32]int64{0: 5, 1: 6, 2: 7}, nil)
			s.commit(a, 40, 40.01, "A2", 1, "t", map[int32]int64{0: 8, 1: 9, 2: 10}, nil)
		}, 1, 2, []int32{1}, 0},
		{"late_answer_same_history", func(s *script) {
			s.join(b, 30, 30.1, jg("B", 1, "A"))
		}, 0, 1, []int32{1, 2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript("g")
			s.join(a, 0, 0.1, jg("A", 1, "A", "A"))
			s.sync(a, 0.2, 0.3, "A", 1, tp("t", 0, 1, 2), map[string][]decode.TopicPartitions{"A": tp("t", 0, 1, 2)})
			s.join(a, 10, 10.5, jg("A", 2, "A", "A", "B"))
			s.join(b, 10.2, 10.5, jg("B", 2, "A"))
			s.sync(a, 10.6, 10.7, "A", 2, tp("t", 0, 1), map[string][]decode.TopicPartitions{"A": tp("t", 0, 1), "B": tp("t", 2)})
			s.sync(b, 10.6, 10.7, "B", 2, tp("t", 2), nil)
			tt.script(s)
			entries, r, _ := run(t, Config{}, s.events(), 50)
			if got := kinds(entries)[KindRecreated]; got != tt.wantRecreated {
				t.Errorf("recreated entries %d; want %d\n%s", got, tt.wantRecreated, entryLines(entries))
			}
			if len(r.Groups) != tt.wantHistories {
				t.Fatalf("%d histories of the group; want %d", len(r.Groups), tt.wantHistories)
			}
			last := r.Groups[len(r.Groups)-1]
			var gens []int32
			for _, g := range last.Generations {
				gens = append(gens, g.Generation)
			}
			if !slices.Equal(gens, tt.wantLastGens) {
				t.Errorf("last history's generations %v; want %v", gens, tt.wantLastGens)
			}
			if got := kinds(entries)[KindCommit]; got != tt.wantCommitLines {
				t.Errorf("commit entries %d; want %d (a commit in a stable new generation is not during revocation)\n%s",
					got, tt.wantCommitLines, entryLines(entries))
			}
			if tt.wantHistories == 2 {
				if len(r.Groups[0].Unknown) == 0 || len(last.Unknown) == 0 {
					t.Errorf("notes: old %v, new %v; want a note in both histories", r.Groups[0].Unknown, last.Unknown)
				}
			}
		})
	}
}

// TestEpochBackwards: KIP-848, a member joining a group whose epoch was 2
// and getting epoch 1 means the group was re-created: a new history.
func TestEpochBackwards(t *testing.T) {
	s := kip848Script()
	s.evs = s.evs[:len(s.evs)-1] // without the fencing at the end
	h := &decode.ConsumerGroupHeartbeat{MemberID: "", MemberEpoch: 0, AssignedMemberID: "N1", AssignedEpoch: 1,
		SubscribedTopicNames: []string{"orders"}, HeartbeatInterval: 5 * time.Second}
	s.ev(cC, 68, 30, 30.002).ConsumerGroupHeartbeat = h
	entries, r, _ := run(t, Config{}, s.events(), 40)
	if got := kinds(entries)[KindRecreated]; got != 1 {
		t.Fatalf("recreated entries %d; want 1\n%s", got, entryLines(entries))
	}
	if len(r.Groups) != 2 || r.Groups[0].Group != "kip848" || r.Groups[1].Group != "kip848" {
		t.Fatalf("%d histories; want the group twice", len(r.Groups))
	}
}
