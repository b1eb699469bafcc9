package timeline

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestMemberFacts: what the timeline tells of members, owners, commits
// and topics, classic and KIP-848.
func TestMemberFacts(t *testing.T) {
	_, _, e := run(t, Config{}, seedScript().events(), 30)
	a, ok := e.Member("test_group_1", "A-1")
	want := MemberFacts{MemberID: "A-1", ClientID: cA.id, ClientAddr: cA.addr, SessionTimeout: 10 * time.Second,
		RebalanceTimeout: 30 * time.Second, LastAlive: sec(28)}
	// LastAlive is kept as Unix nanoseconds: the same instant, in the time
	// zone time.Unix gives, as the proxy's and the journal's events have.
	if !ok || !a.LastAlive.Equal(want.LastAlive) {
		t.Errorf("A-1: last alive %v, %v; want %v", a.LastAlive, ok, want.LastAlive)
	}
	a.LastAlive = want.LastAlive
	if !reflect.DeepEqual(a, want) {
		t.Errorf("A-1: %+v; want %+v", a, want)
	}
	var ids []string
	for m := range e.Members("test_group_1") {
		ids = append(ids, m.MemberID)
	}
	if slices.Sort(ids); !slices.Equal(ids, []string{"A-1", "B-1"}) {
		t.Errorf("members %v; want A-1, B-1", ids)
	}
	if _, ok := e.Member("test_group_1", "nobody"); ok {
		t.Error("a member never seen is known")
	}
	for _, c := range []struct {
		num    int32
		member string
		part   int32
		want   string
	}{
		{2, "B-1", 2, "A-1"}, // A owned it in generation 1
		{2, "A-1", 0, "A-1"},
		{1, "A-1", 0, ""}, // nothing before the first generation
		{3, "A-1", 2, "B-1"},
	} {
		if got := e.OwnerBefore("test_group_1", c.num, c.member, "round_topic", c.part); got != c.want {
			t.Errorf("owner of round_topic[%d] before %s in generation %d: %q; want %q", c.part, c.member, c.num, got, c.want)
		}
	}
	if off, ok := e.Committed("test_group_1", "round_topic", 0); !ok || off != 12 {
		t.Errorf("committed round_topic[0]: %d, %v; want 12", off, ok)
	}
	if _, ok := e.Committed("test_group_1", "round_topic", 7); ok {
		t.Error("a partition never committed has a committed offset")
	}

	var static scenario
	for _, sc := range scenarios {
		if sc.name == "static member restart without rebalance" {
			static = sc
		}
	}
	_, _, e = run(t, Config{}, static.script().events(), static.closeAt)
	if got := e.OwnerBefore("static", 1, "inst-a-2", "round_topic", 0); got != "inst-a-1" {
		t.Errorf("owner before the static restart: %q; want inst-a-1, the member it replaced", got)
	}
	if old, _ := e.Member("static", "inst-a-1"); !old.Gone || old.InstanceID != "inst-a" {
		t.Errorf("the replaced member: %+v; want gone, instance inst-a", old)
	}

	// A static member back under a new member id in a rebalance: the old
	// id is gone.
	s := newScript("static2")
	a1 := jg("", 1, "inst-a-1", "inst-a-1")
	a1.InstanceID, a1.AssignedMemberID = "inst-a", "inst-a-1"
	s.join(cA, 0, 0.010, a1)
	s.sync(cA, 0.011, 0.012, "inst-a-1", 1, tp("round_topic", 0, 1), map[string][]decode.TopicPartitions{"inst-a-1": tp("round_topic", 0, 1)})
	s.hbs(cA, "inst-a-1", 1, 3, 10)
	s.join(cB, 12, 13, jg("B-1", 2, "inst-a-2"))
	a2 := jg("", 2, "inst-a-2", "inst-a-2", "B-1")
	a2.InstanceID, a2.AssignedMemberID = "inst-a", "inst-a-2"
	restarted := client{"consumer-A", "127.0.0.1:50099"}
	s.join(restarted, 12.5, 13, a2)
	s.sync(restarted, 13.1, 13.2, "inst-a-2", 2, tp("round_topic", 0), map[string][]decode.TopicPartitions{
		"inst-a-2": tp("round_topic", 0), "B-1": tp("round_topic", 1)})
	s.sync(cB, 13.1, 13.2, "B-1", 2, tp("round_topic", 1), nil)
	_, r, e := run(t, Config{}, s.events(), 20)
	if m := memberOf(t, genOf(t, r, "static2", 2), "inst-a-2"); m.Status != "replaced" || m.Replaces != "inst-a-1" {
		t.Fatalf("inst-a-2: %s, replaces %q; want replaced inst-a-1", m.Status, m.Replaces)
	}
	if old, _ := e.Member("static2", "inst-a-1"); !old.Gone {
		t.Errorf("the member replaced in a rebalance: %+v; want gone", old)
	}
	if new, _ := e.Member("static2", "inst-a-2"); new.Gone {
		t.Errorf("the member that replaced it: %+v; want not gone", new)
	}

	_, _, e = run(t, Config{}, kip848Script().events(), 30)
	m2, ok := e.Member("kip848", "M2")
	if !ok || !m2.Gone || m2.ClientID != cB.id || m2.LastAlive != sec(12) || m2.SessionTimeout != 0 {
		t.Errorf("M2: %+v, %v; want fenced (gone), consumer-B, alive at 12 s, no session timeout", m2, ok)
	}
	if m1, _ := e.Member("kip848", "M1"); m1.Gone || m1.LastAlive != sec(16.5) {
		t.Errorf("M1: %+v; want active, alive at 16.5 s", m1)
	}
	id := decode.TopicID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if got := e.TopicName("", id); got != "orders" {
		t.Errorf("topic id named %q; want orders", got)
	}
	if got := e.TopicName("", decode.TopicID{9}); got != idKey(decode.TopicID{9}) {
		t.Errorf("an unknown topic id named %q; want its key", got)
	}
	if n := e.PartitionCount("orders"); n != 3 {
		t.Errorf("orders has %d partitions; want 3", n)
	}
}
