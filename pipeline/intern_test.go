package pipeline

import (
	"context"
	"strings"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// offsetCommit is an OffsetCommit v8 exchange of member m-1 committing
// partition 0 of topic t, answered without error.
func offsetCommit(corr int32, sec int, t string) *decode.Exchange {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.MemberID, req.Generation = "g", "m-1", 3
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = t
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = int64(corr)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.SetVersion(8)
	st := kmsg.NewOffsetCommitResponseTopic()
	st.Topic = t
	st.Partitions = append(st.Partitions, kmsg.NewOffsetCommitResponseTopicPartition())
	resp.Topics = append(resp.Topics, st)
	return exchange(req, resp, corr, sec)
}

// offsetFetch is an OffsetFetch v7 exchange answering offset 5 for
// partition 0 of topic t.
func offsetFetch(corr int32, sec int, t string) *decode.Exchange {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group = "g"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = t, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.SetVersion(7)
	st := kmsg.NewOffsetFetchResponseTopic()
	st.Topic = t
	sp := kmsg.NewOffsetFetchResponseTopicPartition()
	sp.Offset = 5
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	return exchange(req, resp, corr, sec)
}

// keepTopics keeps the topic names of the commits and offset fetches it
// is handed, as the timeline does.
type keepTopics struct{ topics []string }

func (k *keepTopics) AddEvents(events []decode.Event) {
	for _, ev := range events {
		if oc := ev.OffsetCommit; oc != nil {
			for _, t := range oc.Topics {
				k.topics = append(k.topics, t.Topic)
			}
		}
		if of := ev.OffsetFetch; of != nil {
			for _, t := range of.Offsets {
				k.topics = append(k.topics, t.Topic)
			}
		}
	}
}

// TestInternTopics: the topic names of commits and offset fetches reach
// the consumers as one shared copy of each, not the decoder's copy per
// frame.
func TestInternTopics(t *testing.T) {
	var k keepTopics
	xs := []*decode.Exchange{offsetCommit(1, 1, "orders"), offsetCommit(2, 2, "orders"), offsetFetch(3, 3, "orders")}
	if err := New(Config{Events: []EventConsumer{&k}}).Run(context.Background(), Slice(xs)); err != nil {
		t.Fatal(err)
	}
	if len(k.topics) != 3 {
		t.Fatalf("got %d topics kept; want 3", len(k.topics))
	}
	want := unsafe.StringData(k.topics[0])
	for i, s := range k.topics {
		if s != "orders" || unsafe.StringData(s) != want {
			t.Errorf("topic %d: got %q at %p; want %q at %p, the first one's copy", i, s, unsafe.StringData(s), "orders", want)
		}
	}

	// The copy kept is not a view of the event's allocation of strings,
	// which it would keep alive.
	block := strings.Repeat("x", 100) + "orders"
	evs := []decode.Event{{OffsetCommit: &decode.OffsetCommit{Topics: []decode.CommitTopic{{Topic: block[100:]}}}}}
	intern(evs)
	if got := evs[0].OffsetCommit.Topics[0].Topic; got != "orders" || unsafe.StringData(got) == unsafe.StringData(block[100:]) {
		t.Errorf("interned %q shares the event's allocation", got)
	}
}

// fresh is s in an allocation of its own, as the decoder makes a string per
// frame.
func fresh(s string) string { return string([]byte(s)) }

// groupEvents are a JoinGroup, a SyncGroup and a LeaveGroup event whose
// every string is a fresh copy, and the strings intern must share, by
// where they are.
func groupEvents() ([]decode.Event, func(evs []decode.Event) map[string]string) {
	tps := func() []decode.TopicPartitions {
		return []decode.TopicPartitions{{Topic: fresh("orders"), Partitions: []int32{0}}}
	}
	sub := func() *decode.Subscription {
		return &decode.Subscription{Topics: []string{fresh("orders")}, Rack: fresh("r1"), OwnedPartitions: tps(),
			Sticky: &decode.StickyUserData{CurrentAssignment: tps()}}
	}
	join := &decode.JoinGroup{MemberID: fresh("m-1"), InstanceID: fresh("i-1"), ProtocolType: fresh("consumer"),
		ProtocolName: fresh("range"), Leader: fresh("m-1"), AssignedMemberID: fresh("m-1"),
		Protocols: []decode.JoinProtocol{{Name: fresh("range"), Subscription: sub()}},
		Members:   []decode.JoinMember{{MemberID: fresh("m-1"), InstanceID: fresh("i-1"), Subscription: sub()}}}
	sync := &decode.SyncGroup{MemberID: fresh("m-1"), InstanceID: fresh("i-1"), ProtocolType: fresh("consumer"),
		ProtocolName: fresh("range"), Assignment: &decode.Assignment{Partitions: tps()},
		Plan: []decode.MemberAssignment{{MemberID: fresh("m-1"), Assignment: &decode.Assignment{Partitions: tps()}}}}
	leave := &decode.LeaveGroup{Members: []decode.LeavingMember{{MemberID: fresh("m-1"), InstanceID: fresh("i-1")}}}
	evs := []decode.Event{{Group: fresh("g"), JoinGroup: join}, {Group: fresh("g"), SyncGroup: sync}, {Group: fresh("g"), LeaveGroup: leave}}
	where := func(evs []decode.Event) map[string]string {
		j, s, l := evs[0].JoinGroup, evs[1].SyncGroup, evs[2].LeaveGroup
		js, ms := j.Protocols[0].Subscription, j.Members[0].Subscription
		return map[string]string{
			"join group": evs[0].Group, "sync group": evs[1].Group, "leave group": evs[2].Group,
			"join member": j.MemberID, "join leader": j.Leader, "join assigned": j.AssignedMemberID,
			"join members' member": j.Members[0].MemberID, "sync member": s.MemberID,
			"plan member": s.Plan[0].MemberID, "leaving member": l.Members[0].MemberID,
			"join instance": j.InstanceID, "join members' instance": j.Members[0].InstanceID,
			"sync instance": s.InstanceID, "leaving instance": l.Members[0].InstanceID,
			"join type": j.ProtocolType, "sync type": s.ProtocolType,
			"join protocol": j.ProtocolName, "offered protocol": j.Protocols[0].Name, "sync protocol": s.ProtocolName,
			"subscribed topic": js.Topics[0], "owned topic": js.OwnedPartitions[0].Topic,
			"sticky topic": js.Sticky.CurrentAssignment[0].Topic, "member's subscribed topic": ms.Topics[0],
			"member's owned topic": ms.OwnedPartitions[0].Topic, "assigned topic": s.Assignment.Partitions[0].Topic,
			"planned topic": s.Plan[0].Assignment.Partitions[0].Topic,
			"rack":          js.Rack, "member's rack": ms.Rack,
		}
	}
	return evs, where
}

// TestInternGroupStrings: the names of JoinGroup, SyncGroup and LeaveGroup
// events that the timeline and the diagnosis keep per generation and
// member reach them as one shared copy of each.
func TestInternGroupStrings(t *testing.T) {
	first, where := groupEvents()
	second, _ := groupEvents()
	intern(first)
	intern(second)
	a, b := where(first), where(second)
	for name, s := range a {
		if s != b[name] || unsafe.StringData(s) != unsafe.StringData(b[name]) {
			t.Errorf("%s: %q at %p and %q at %p; want one copy", name, s, unsafe.StringData(s), b[name], unsafe.StringData(b[name]))
		}
	}
	// Equal names share a copy across fields and events too.
	for _, same := range [][]string{
		{"join group", "sync group", "leave group"},
		{"join member", "join leader", "sync member", "plan member", "leaving member"},
		{"subscribed topic", "owned topic", "assigned topic", "planned topic"},
		{"join protocol", "offered protocol", "sync protocol"},
	} {
		for _, name := range same[1:] {
			if unsafe.StringData(a[name]) != unsafe.StringData(a[same[0]]) {
				t.Errorf("%s and %s: two copies of %q", same[0], name, a[name])
			}
		}
	}
}
