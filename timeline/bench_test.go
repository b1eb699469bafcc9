package timeline

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

const (
	benchMembers    = 1000
	benchPartitions = 10000
	benchTopic      = "big"
)

// bigGroup builds the events of synthetic rebalances of a 1,000-member
// group over 10,000 partitions: every member rejoins, the leader's
// JoinGroup response lists everyone, the leader's SyncGroup carries the
// whole plan, and each member gets its share, shifted by one member per
// rebalance so that every partition moves.
type bigGroup struct {
	ids  []string
	subs *decode.Subscription
}

func newBigGroup() *bigGroup {
	bg := &bigGroup{subs: consumerSub(benchTopic)}
	for i := 0; i < benchMembers; i++ {
		bg.ids = append(bg.ids, fmt.Sprintf("consumer-%04d-6f1c2a9e-3b7d-4c0e-9a51-%012d", i, i))
	}
	return bg
}

// share is member i's partitions in rebalance n.
func share(i, n int) []decode.TopicPartitions {
	per := benchPartitions / benchMembers
	j := (i + n) % benchMembers
	ps := make([]int32, per)
	for k := range ps {
		ps[k] = int32(j*per + k)
	}
	return []decode.TopicPartitions{{Topic: benchTopic, Partitions: ps}}
}

// rebalance returns the events of rebalance n (forming generation n+1),
// starting at t.
func (bg *bigGroup) rebalance(n int, t time.Time) []decode.Event {
	gen := int32(n + 1)
	leader := bg.ids[0]
	joinEnd := t.Add(2 * time.Second)
	evs := make([]decode.Event, 0, 2*benchMembers)
	members := make([]decode.JoinMember, benchMembers)
	plan := make([]decode.MemberAssignment, benchMembers)
	for i, id := range bg.ids {
		members[i] = decode.JoinMember{MemberID: id, Subscription: bg.subs}
		plan[i] = decode.MemberAssignment{MemberID: id, Assignment: &decode.Assignment{Partitions: share(i, n)}}
	}
	for i, id := range bg.ids {
		j := &decode.JoinGroup{MemberID: id, ProtocolType: "consumer", SessionTimeout: 45 * time.Second,
			RebalanceTimeout: 5 * time.Minute, Protocols: []decode.JoinProtocol{{Name: "range", Subscription: bg.subs}},
			Generation: gen, ProtocolName: "range", Leader: leader, AssignedMemberID: id}
		if i == 0 {
			j.Members = members
		}
		evs = append(evs, decode.Event{At: t.Add(time.Duration(i) * time.Millisecond), RespondedAt: joinEnd,
			Group: "big-group", APIKey: 11, ClientID: id[:13], ClientAddr: "10.0.0.1:40000", JoinGroup: j})
	}
	syncAt := joinEnd.Add(10 * time.Millisecond)
	for i, id := range bg.ids {
		s := &decode.SyncGroup{MemberID: id, Generation: gen, ProtocolType: "consumer", ProtocolName: "range",
			Assignment: &decode.Assignment{Partitions: share(i, n)}}
		if i == 0 {
			s.Plan = plan
		}
		evs = append(evs, decode.Event{At: syncAt, RespondedAt: syncAt.Add(time.Duration(i) * time.Microsecond),
			Group: "big-group", APIKey: 14, ClientID: id[:13], ClientAddr: "10.0.0.1:40000", SyncGroup: s})
	}
	return evs
}

// BenchmarkRebalance measures processing one full rebalance of a
// 1,000-member group over 10,000 partitions (2,000 events), live entries
// included. Target: under 50 ms per rebalance.
func BenchmarkRebalance(b *testing.B) {
	bg := newBigGroup()
	e := New(Config{OnEntry: func(Entry) {}})
	t := base
	for _, ev := range bg.rebalance(0, t) {
		e.Add(ev)
	}
	rebalances := make([][]decode.Event, 8)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		t = t.Add(20 * time.Second) // within the session timeout: nobody expires
		if rebalances[n%8] == nil || n >= 8 {
			rebalances[n%8] = bg.rebalance(n+1, t)
		}
		evs := rebalances[n%8]
		b.StartTimer()
		for i := range evs {
			e.add(&evs[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/rebalance")
}

// BenchmarkRender measures rendering the report of that group after two
// rebalances: Report, then JSON and text.
func BenchmarkRender(b *testing.B) {
	bg := newBigGroup()
	e := New(Config{})
	for n := 0; n < 3; n++ {
		for _, ev := range bg.rebalance(n, base.Add(time.Duration(n)*time.Hour)) {
			e.Add(ev)
		}
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		r := e.Report()
		if err := WriteJSON(io.Discard, r); err != nil {
			b.Fatal(err)
		}
		if err := WriteText(io.Discard, r, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSteadyState measures events per second in a stable group:
// heartbeats and commits of its 1,000 members.
func BenchmarkSteadyState(b *testing.B) {
	bg := newBigGroup()
	e := New(Config{OnEntry: func(Entry) {}})
	for _, ev := range bg.rebalance(0, base) {
		e.Add(ev)
	}
	evs := make([]decode.Event, 0, 2*benchMembers)
	for i, id := range bg.ids {
		evs = append(evs, decode.Event{Group: "big-group", APIKey: 12,
			Heartbeat: &decode.Heartbeat{MemberID: id, Generation: 1}})
		offsets := share(i, 0)[0].Partitions
		ct := decode.CommitTopic{Topic: benchTopic}
		for _, p := range offsets {
			ct.Partitions = append(ct.Partitions, decode.CommitPartition{Partition: p, Offset: 1})
		}
		evs = append(evs, decode.Event{Group: "big-group", APIKey: 8,
			OffsetCommit: &decode.OffsetCommit{MemberID: id, Generation: 1, Topics: []decode.CommitTopic{ct}}})
	}
	t := base.Add(3 * time.Second)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		ev := evs[n%len(evs)]
		if n%len(evs) == 0 {
			t = t.Add(time.Second) // every member heartbeats and commits once a second
		}
		ev.At, ev.RespondedAt = t, t.Add(time.Millisecond)
		e.add(&ev)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestBigGroup checks that the benchmark's rebalances are what they claim:
// stable generations of 1,000 members where every partition moves.
func TestBigGroup(t *testing.T) {
	bg := newBigGroup()
	var evs []decode.Event
	for n := 0; n < 2; n++ {
		evs = append(evs, bg.rebalance(n, base.Add(time.Duration(n)*20*time.Second))...)
	}
	_, r, _ := run(t, Config{}, evs, -1)
	g2 := genOf(t, r, "big-group", 2)
	if g2.Status != "stable" || len(g2.Members) != benchMembers || len(g2.Unassigned) != 0 {
		t.Fatalf("gen 2 %s with %d members, unassigned %v; want stable, %d, none", g2.Status, len(g2.Members), g2.Unassigned, benchMembers)
	}
	moved := 0
	for _, m := range g2.Members {
		moved += len(m.Added[benchTopic])
	}
	if moved != benchPartitions || g2.Trigger.Kind != TriggerLeaderRejoined {
		t.Errorf("moved %d, trigger %s; want %d, leader_rejoined", moved, g2.Trigger.Kind, benchPartitions)
	}
}
