package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// topicT is topic t's id in the KIP-848 heartbeats of upgradeScript.
var topicT = [16]byte{9, 9, 9}

// cghb appends a ConsumerGroupHeartbeat of member at epoch answered at
// respEpoch with partitions ps of topic t (nil: unchanged; epoch -1: it
// leaves).
func (s *script) cghb(c client, req, resp float64, member string, epoch, respEpoch int32, ps []int32) {
	h := &decode.ConsumerGroupHeartbeat{MemberID: member, MemberEpoch: epoch, AssignedMemberID: member,
		AssignedEpoch: respEpoch, HeartbeatInterval: 3 * time.Second}
	if ps != nil {
		h.Assignment = []decode.TopicIDPartitions{{TopicID: topicT, Partitions: ps}}
	}
	if epoch == 0 {
		h.SubscribedTopicNames = []string{"t"}
	}
	s.ev(c, 68, req, resp).ConsumerGroupHeartbeat = h
}

// upgradeScript: classic A-1 and B-1 own t (gen 1); at 10 s C-1 joins
// with the consumer protocol, which converts the group (epoch 2); A-1
// and B-1 rejoin as classic members of epoch 2. With roll, each classic
// member is then replaced by a consumer-protocol one (A-1 leaves at 20 s,
// D-1 joins at 25 s, B-1 leaves at 30 s): the upgrade completes at 30 s.
// Without, A-1 and B-1 stay until end.
func upgradeScript(roll bool, end float64) *script {
	s := newScript("g")
	md := s.ev(cA, 3, 0, 0.0005)
	md.Group, md.Metadata = "", &decode.Metadata{Topics: []decode.MetadataTopic{{Name: "t", TopicID: topicT, Partitions: 3}}}
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1}, "B-1": {2}})
	s.hbs(cA, "A-1", 1, 3, 10, 3)
	s.hbs(cB, "B-1", 1, 3, 10, 3)
	s.cghb(cC, 10, 10.01, "C-1", 0, 2, []int32{})
	s.hb(cA, 10.5, 10.501, "A-1", 1, 27)
	s.join(cA, 10.51, 10.52, s.jg("A-1", 2, "A-1"))
	s.sync(cA, 10.53, 10.54, "A-1", 2, parts("t", 0), nil)
	s.hb(cB, 10.6, 10.601, "B-1", 1, 27)
	s.join(cB, 10.61, 10.62, s.jg("B-1", 2, "B-1"))
	s.sync(cB, 10.63, 10.64, "B-1", 2, parts("t", 2), nil)
	s.cghb(cC, 11, 11.01, "C-1", 2, 2, []int32{1})
	cD := client{"consumer-g-4", "10.0.0.4:4004"}
	if !roll {
		s.hbs(cA, "A-1", 2, 13, end, 3)
		s.hbs(cB, "B-1", 2, 13, end, 3)
		for at := 13.5; at < end; at += 3 {
			s.cghb(cC, at, at+0.01, "C-1", 2, 2, nil)
		}
		return s
	}
	s.hbs(cA, "A-1", 2, 13, 20, 3)
	s.hbs(cB, "B-1", 2, 13, 30, 3)
	s.leave(cA, 20, 20.01, "A-1", "rolled to group.protocol=consumer")
	s.cghb(cC, 20.5, 20.51, "C-1", 2, 3, []int32{0, 1})
	s.cghb(cD, 25, 25.01, "D-1", 0, 4, []int32{})
	s.cghb(cC, 25.5, 25.51, "C-1", 3, 3, []int32{1})
	s.cghb(cC, 26, 26.01, "C-1", 3, 4, []int32{1})
	s.cghb(cD, 26.5, 26.51, "D-1", 4, 4, []int32{0})
	s.leave(cB, 30, 30.01, "B-1", "rolled to group.protocol=consumer")
	s.cghb(cC, 30.5, 30.51, "C-1", 4, 5, []int32{1, 2})
	s.cghb(cD, 31, 31.01, "D-1", 4, 5, []int32{0})
	for at := 33.0; at < end; at += 3 {
		s.cghb(cC, at, at+0.01, "C-1", 5, 5, nil)
		s.cghb(cD, at+0.5, at+0.51, "D-1", 5, 5, nil)
	}
	return s
}

// TestMigrationStalled: a group left mixed for 10 minutes is a finding
// naming the classic members still in it; the same upgrade rolled in 20 s
// is none, and the rebalances of its roll, a rebalance loop by count, say
// that a migration was under way.
func TestMigrationStalled(t *testing.T) {
	fs, _ := diagnoseScript(t, Config{}, upgradeScript(false, 615), 615)
	i := slices.IndexFunc(fs, func(f Finding) bool { return f.Kind == MigrationStalled })
	if i < 0 {
		t.Fatalf("no migration_stalled in %+v", fs)
	}
	f := fs[i]
	if f.Severity != Warning || !slices.Equal(f.Evidence["remaining"].([]string), []string{"A-1", "B-1"}) || f.Evidence["ongoing"] != true ||
		f.Evidence["direction"] != "upgrade" || f.Evidence["startedBy"] != "C-1" || len(f.Members) != 2 {
		t.Errorf("finding %+v; want a warning naming A-1 and B-1, the upgrade started by C-1 still under way", f)
	}
	for _, s := range []string{"the group had classic and consumer members together for 10.1 min", "classic members still in the group: A-1, B-1"} {
		if !strings.Contains(f.Explanation, s) {
			t.Errorf("explanation %q lacks %q", f.Explanation, s)
		}
	}
	if fs, _ := diagnoseScript(t, Config{}, upgradeScript(false, 300), 300); slices.ContainsFunc(fs, func(f Finding) bool { return f.Kind == MigrationStalled }) {
		t.Errorf("an upgrade under way for 5 minutes is a finding: %+v", fs)
	}

	fs, _ = diagnoseScript(t, Config{}, upgradeScript(true, 60), 60)
	if slices.ContainsFunc(fs, func(f Finding) bool { return f.Kind == MigrationStalled }) {
		t.Errorf("an upgrade rolled in 20 s is a finding: %+v", fs)
	}
	i = slices.IndexFunc(fs, func(f Finding) bool { return f.Kind == RebalanceLoop })
	if i < 0 {
		t.Fatalf("the roll's four rebalances (one growth) make no rebalance_loop: %+v", fs)
	}
	if f := fs[i]; f.Evidence["migration"] != "upgrade" || !strings.Contains(f.Explanation, "an online upgrade between the classic and the consumer protocol was under way") {
		t.Errorf("rebalance_loop %+v; want it to say the upgrade was under way", f)
	}
}
