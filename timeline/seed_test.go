package timeline

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

var (
	cA = client{"consumer-A", "127.0.0.1:50001"}
	cB = client{"consumer-B", "127.0.0.1:50002"}
	cC = client{"consumer-C", "127.0.0.1:50003"}
)

// seedScript is the seed scenario: A alone owns round_topic 0,1,2; B joins
// at 11.2 s; A commits during revocation; A, in a long poll, rejoins only at
// 19.86 s, so the group waits for it; then A owns 0,1 and B owns 2.
func seedScript() *script {
	s := newScript("test_group_1")
	s.memberIDRequired(cA, 0, 0.001, "A-1")
	s.join(cA, 0.002, 0.010, jg("A-1", 1, "A-1", "A-1"))
	all := tp("round_topic", 0, 1, 2)
	s.sync(cA, 0.011, 0.013, "A-1", 1, all, map[string][]decode.TopicPartitions{"A-1": all})
	s.hbs(cA, "A-1", 1, 3, 11)
	s.commit(cA, 10.0, 10.002, "A-1", 1, "round_topic", map[int32]int64{0: 5, 1: 4, 2: 6}, nil)
	s.memberIDRequired(cB, 11.200, 11.201, "B-1")
	s.hb(cA, 12.0, 12.001, "A-1", 1, errRebalanceInProgress)
	s.commit(cA, 12.100, 12.103, "A-1", 1, "round_topic", map[int32]int64{0: 12, 1: 9, 2: 11}, nil)
	s.hb(cA, 15.0, 15.001, "A-1", 1, errRebalanceInProgress)
	s.hb(cA, 18.0, 18.001, "A-1", 1, errRebalanceInProgress)
	s.join(cA, 19.860, 19.870, jg("A-1", 2, "A-1", "A-1", "B-1"))
	s.join(cB, 11.204, 19.870, jg("B-1", 2, "A-1"))
	s.sync(cB, 19.871, 19.880, "B-1", 2, tp("round_topic", 2), nil)
	s.sync(cA, 19.872, 19.875, "A-1", 2, tp("round_topic", 0, 1), map[string][]decode.TopicPartitions{
		"A-1": tp("round_topic", 0, 1), "B-1": tp("round_topic", 2)})
	s.hbs(cA, "A-1", 2, 22, 30)
	s.hbs(cB, "B-1", 2, 22, 30)
	return s
}

func TestSeedScenario(t *testing.T) {
	entries, r, _ := run(t, Config{}, seedScript().events(), 30)
	t.Log("\n" + entryLines(entries))
	g1 := genOf(t, r, "test_group_1", 1)
	if got := g1.Members[0].Assignment["round_topic"]; !reflect.DeepEqual(got, []int32{0, 1, 2}) {
		t.Errorf("gen 1 A assignment = %v; want [0 1 2]", got)
	}
	g2 := genOf(t, r, "test_group_1", 2)
	if g2.Trigger.Kind != TriggerMemberJoined || g2.Trigger.Member != "B-1" {
		t.Errorf("gen 2 trigger = %+v; want member_joined B-1", g2.Trigger)
	}
	if g2.StartedAt == nil || *g2.StartedAt != stamp(sec(11.2)) {
		t.Errorf("gen 2 startedAt = %v; want %s", g2.StartedAt, stamp(sec(11.2)))
	}
	if g2.WaitedFor != "A-1" {
		t.Errorf("waitedFor = %q; want A-1", g2.WaitedFor)
	}
	a, b := memberOf(t, g2, "A-1"), memberOf(t, g2, "B-1")
	if !reflect.DeepEqual(a.Assignment, map[string][]int32{"round_topic": {0, 1}}) || !reflect.DeepEqual(a.Revoked, map[string][]int32{"round_topic": {2}}) {
		t.Errorf("A assignment %v revoked %v; want [0 1] and [2]", a.Assignment, a.Revoked)
	}
	if !reflect.DeepEqual(b.Assignment, map[string][]int32{"round_topic": {2}}) || !reflect.DeepEqual(b.Added, map[string][]int32{"round_topic": {2}}) {
		t.Errorf("B assignment %v added %v; want [2] and [2]", b.Assignment, b.Added)
	}
	if b.Status != "joined" || !b.JoinRetried || a.Status != "rejoined" {
		t.Errorf("statuses A %q B %q retried %v; want rejoined, joined, true", a.Status, b.Status, b.JoinRetried)
	}
	if len(g2.CommitsDuringRevocation) != 1 {
		t.Fatalf("commits during revocation = %d; want 1", len(g2.CommitsDuringRevocation))
	}
	c := g2.CommitsDuringRevocation[0]
	if c.MemberID != "A-1" || c.Generation != 1 || c.Offsets["round_topic"][0] != 12 || c.Errors != nil || c.Result != "ok" {
		t.Errorf("commit = %+v; want A-1 gen 1 round_topic[0]=12 ok", c)
	}
	if g2.StopTheWorldMs == nil || *g2.StopTheWorldMs != 8680 {
		t.Errorf("stopTheWorldMs = %v; want 8680", g2.StopTheWorldMs)
	}
	if g2.Status != "stable" || g2.Leader != "A-1" || g2.Mode != ModeEager || g2.Protocol != "range" {
		t.Errorf("gen 2 %s leader %s mode %s protocol %s", g2.Status, g2.Leader, g2.Mode, g2.Protocol)
	}
	for _, k := range []Kind{KindRebalanceStarted, KindCommit, KindMemberJoined, KindLeader, KindPlan, KindStable} {
		if kinds(entries)[k] == 0 {
			t.Errorf("no %s entry", k)
		}
	}
	if e := findEntry(entries, KindMemberJoined, "slowest; group waited for it"); e == nil || e.Member != "A-1" {
		t.Errorf("no entry saying the group waited for A-1")
	}
}

// TestLateJoinResponse delivers B's JoinGroup response after the leader's
// SyncGroup, as happens when responses on two connections reach kproxy out
// of order: the story must be the same as in order.
func TestLateJoinResponse(t *testing.T) {
	inOrder := seedScript().events()
	var late []decode.Event
	var bJoin decode.Event
	for _, ev := range inOrder {
		switch {
		case ev.JoinGroup != nil && ev.JoinGroup.MemberID == "B-1" && ev.JoinGroup.Generation == 2:
			bJoin = ev
			continue
		case ev.SyncGroup != nil && ev.SyncGroup.MemberID == "B-1":
			late = append(late, bJoin)
		}
		late = append(late, ev)
	}
	_, want, _ := run(t, Config{}, inOrder, 30)
	entries, got, _ := run(t, Config{}, late, 30)
	var a, b bytes.Buffer
	WriteJSON(&a, got)
	WriteJSON(&b, want)
	if a.String() != b.String() {
		t.Errorf("report with the late JoinGroup response differs:\n%s\nwant\n%s\nentries:\n%s", a.String(), b.String(), entryLines(entries))
	}
}
