package timeline

import (
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// epochScript: M1 joins and is assigned orders 0,1 at epoch 1; M2 joins
// (group epoch 2); M1 is told at epoch 1 to give up orders[1], releases
// it and reaches epoch 2 keeping orders[0]; M2 gets orders[1] at epoch 2.
// M1 then commits at its old epoch 1 with the results given: as a commit
// in flight while its epoch moved, or a zombie's.
func epochScript(codes map[int32]int16, parts ...int32) *script {
	s := newScript("epochs")
	id := [16]byte{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}
	md := s.ev(cA, 3, 0, 0.001)
	md.Group, md.Metadata = "", &decode.Metadata{Topics: []decode.MetadataTopic{{Name: "orders", TopicID: id, Partitions: 2}}}
	tp := func(ps ...int32) []decode.TopicIDPartitions {
		return []decode.TopicIDPartitions{{TopicID: id, Partitions: ps}}
	}
	hb := func(c client, req float64, member string, epoch int32, owned []decode.TopicIDPartitions, respEpoch int32, assignment []decode.TopicIDPartitions) {
		h := &decode.ConsumerGroupHeartbeat{MemberID: member, MemberEpoch: epoch, OwnedPartitions: owned,
			AssignedMemberID: member, AssignedEpoch: respEpoch, Assignment: assignment, HeartbeatInterval: 5 * time.Second}
		if epoch == 0 {
			h.SubscribedTopicNames = []string{"orders"}
		}
		s.ev(c, 68, req, req+0.002).ConsumerGroupHeartbeat = h
	}
	hb(cA, 1, "M1", 0, nil, 1, tp(0, 1))
	hb(cB, 5, "M2", 0, nil, 2, tp())
	hb(cA, 6, "M1", 1, tp(0, 1), 1, tp(0))
	hb(cA, 7, "M1", 1, tp(0), 2, tp(0))
	hb(cB, 8, "M2", 2, tp(), 2, tp(1))
	offsets := map[int32]int64{}
	for _, p := range parts {
		offsets[p] = 42
	}
	s.commit(cA, 9, 9.003, "M1", 1, "orders", offsets, codes)
	return s
}

// TestCommitEpochs checks how a KIP-848 commit at an epoch behind its
// member's is told: the member's epoch, each partition's assignment epoch
// from the member's heartbeats, and what the coordinator's answer means.
func TestCommitEpochs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []int32
		codes map[int32]int16
		want  string // in the commit entry's text
	}{
		{"kip1251", []int32{0, 1}, map[int32]int16{1: errStaleMemberEpoch},
			"epoch 1 behind the member's 2 (orders[0] assigned at epoch 1, orders[1] not assigned to it): the coordinator took the partitions assigned at or before the commit's epoch and refused the others"},
		{"taken", []int32{0}, nil,
			"orders[0]=42 ok (3 ms); epoch 1 behind the member's 2 (orders[0] assigned at epoch 1): taken, as KIP-1251's assignment epochs (Kafka 4.3+) allow"},
		{"zombie", []int32{1}, map[int32]int16{1: errStaleMemberEpoch},
			"epoch 1 behind the member's 2 (orders[1] not assigned to it): refused, the partitions being assigned to the member after the commit's epoch or not at all"},
		// Kafka 4.4.0: orders[1] fails the check, which fails the request.
		{"whole", []int32{0, 1}, map[int32]int16{0: errStaleMemberEpoch, 1: errStaleMemberEpoch},
			"epoch 1 behind the member's 2 (orders[0] assigned at epoch 1, orders[1] not assigned to it): refused whole: a partition assigned to the member after the commit's epoch or not at all fails KIP-1251's check (Kafka 4.3+), and the coordinator then refuses every partition of the commit, those held since its epoch included"},
		// Before Kafka 4.3: only the member's current epoch is taken.
		{"strict", []int32{0}, map[int32]int16{0: errStaleMemberEpoch},
			"epoch 1 behind the member's 2 (orders[0] assigned at epoch 1): refused, although by the member's heartbeats each was assigned at or before the commit's epoch: the coordinator held the commit to the member's current epoch, as before KIP-1251 (Kafka 4.3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries, _, _ := run(t, Config{}, epochScript(tc.codes, tc.parts...).events(), -1)
			var commit *Entry
			for i := range entries {
				if entries[i].Kind == KindCommit {
					commit = &entries[i]
				}
			}
			if commit == nil {
				var b strings.Builder
				for _, e := range entries {
					b.WriteString(e.Text + "\n")
				}
				t.Fatalf("no commit entry; entries:\n%s", b.String())
			}
			if !strings.Contains(commit.Text, tc.want) {
				t.Errorf("commit entry %q; want it to contain %q", commit.Text, tc.want)
			}
			if commit.Fields["member_epoch"] != int32(2) {
				t.Errorf("member_epoch field %v; want 2", commit.Fields["member_epoch"])
			}
			ae, _ := commit.Fields["assignment_epochs"].(map[string]map[int32]int32)
			for _, p := range tc.parts {
				want := map[int32]int32{0: 1, 1: -1}[p]
				if got, ok := ae["orders"][p]; !ok || got != want {
					t.Errorf("assignment_epochs %v: orders[%d] %d; want %d", ae, p, got, want)
				}
			}
		})
	}
}

// TestCommitAtMemberEpochUntold: a commit at the member's own epoch is not
// told, nor marked.
func TestCommitAtMemberEpochUntold(t *testing.T) {
	s := epochScript(nil)
	s.commit(cA, 10, 10.003, "M1", 2, "orders", map[int32]int64{0: 50}, nil)
	entries, _, _ := run(t, Config{}, s.events(), -1)
	for _, e := range entries {
		if e.Kind == KindCommit {
			t.Errorf("commit told: %s", e.Text)
		}
	}
}
