package timeline

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
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
	ids        []string
	partitions int // over the group's members, evenly
	subs       *decode.Subscription
}

func newBigGroup() *bigGroup {
	return newGroupOf(benchMembers, benchPartitions)
}

// newGroupOf is a bigGroup of members over partitions, a multiple of
// members.
func newGroupOf(members, partitions int) *bigGroup {
	bg := &bigGroup{partitions: partitions, subs: consumerSub(benchTopic)}
	for i := 0; i < members; i++ {
		bg.ids = append(bg.ids, fmt.Sprintf("consumer-%04d-6f1c2a9e-3b7d-4c0e-9a51-%012d", i, i))
	}
	return bg
}

// share is member i's partitions in rebalance n.
func (bg *bigGroup) share(i, n int) []decode.TopicPartitions {
	per := bg.partitions / len(bg.ids)
	j := (i + n) % len(bg.ids)
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
	evs := make([]decode.Event, 0, 2*len(bg.ids))
	members := make([]decode.JoinMember, len(bg.ids))
	plan := make([]decode.MemberAssignment, len(bg.ids))
	for i, id := range bg.ids {
		members[i] = decode.JoinMember{MemberID: id, Subscription: bg.subs}
		plan[i] = decode.MemberAssignment{MemberID: id, Assignment: &decode.Assignment{Partitions: bg.share(i, n)}}
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
			Assignment: &decode.Assignment{Partitions: bg.share(i, n)}}
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
		evs = append(evs, bg.commit(id, 1, bg.share(i, 0), 1))
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

// commit is member id's commit, naming generation gen, of offset in each
// of parts.
func (bg *bigGroup) commit(id string, gen int32, parts []decode.TopicPartitions, offset int64) decode.Event {
	var topics []decode.CommitTopic
	for _, tp := range parts {
		ct := decode.CommitTopic{Topic: tp.Topic}
		for _, p := range tp.Partitions {
			ct.Partitions = append(ct.Partitions, decode.CommitPartition{Partition: p, Offset: offset})
		}
		topics = append(topics, ct)
	}
	return decode.Event{Group: "big-group", APIKey: 8,
		OffsetCommit: &decode.OffsetCommit{MemberID: id, Generation: gen, Topics: topics}}
}

// BenchmarkCommits measures commits per second in a stable group of
// 1,000, 100 or 10 members over 10,000 partitions, each member committing
// all its partitions (10, 100 or 1,000) once a second: the commit path
// alone, and with it the check of what the member owns.
func BenchmarkCommits(b *testing.B) {
	for _, members := range []int{1000, 100, 10} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			bg := newGroupOf(members, benchPartitions)
			e := New(Config{OnEntry: func(Entry) {}})
			for _, ev := range bg.rebalance(0, base) {
				e.Add(ev)
			}
			evs := make([]decode.Event, 0, members)
			for i, id := range bg.ids {
				evs = append(evs, bg.commit(id, 1, bg.share(i, 0), 1))
			}
			benchCommits(b, e, evs)
		})
	}
}

// BenchmarkSuspectCommits measures commits per second in a stable
// 1,000-member group over 10,000 partitions where 1 or 10 members (strays)
// also commit, each second, the 10 partitions each held before the last
// rebalance (which moved every partition), naming the new generation:
// late commits of revoked partitions, as a faulty client build would make,
// each partition flagged not owned and its owner named (10 or 100
// suspects a second among 1,001 or 1,010 commits).
func BenchmarkSuspectCommits(b *testing.B) {
	for _, strays := range []int{1, 10} {
		b.Run(fmt.Sprintf("strays=%d", strays), func(b *testing.B) {
			e, evs := suspectCommits(strays, func(Entry) {})
			benchCommits(b, e, evs)
		})
	}
}

// suspectCommits is BenchmarkSuspectCommits's engine, its group past its
// two rebalances, and a second of its commits.
func suspectCommits(strays int, onEntry func(Entry)) (*Engine, []decode.Event) {
	bg := newBigGroup()
	e := New(Config{OnEntry: onEntry})
	for n := 0; n < 2; n++ {
		for _, ev := range bg.rebalance(n, base.Add(time.Duration(n)*20*time.Second)) {
			e.Add(ev)
		}
	}
	every := benchMembers / strays
	evs := make([]decode.Event, 0, benchMembers+strays)
	for i, id := range bg.ids {
		evs = append(evs, bg.commit(id, 2, bg.share(i, 1), 1))
		if i%every == every/2 { // mid-range: no search order finds the owner first
			evs = append(evs, bg.commit(id, 2, bg.share(i, 0), 1))
		}
	}
	return e, evs
}

// benchCommits feeds evs to e once a second of event time, from 3 s past
// the group's last rebalance, over and over, and reports events per
// second.
func benchCommits(b *testing.B, e *Engine, evs []decode.Event) {
	t := e.now.Add(3 * time.Second)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		ev := evs[n%len(evs)]
		if n%len(evs) == 0 {
			t = t.Add(time.Second)
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

// TestSuspectCommits checks that a second of BenchmarkSuspectCommits's
// commits with 10 strays flags what it claims: 100 partitions not owned,
// each with its owner named.
func TestSuspectCommits(t *testing.T) {
	var suspects []Entry
	e, evs := suspectCommits(10, func(en Entry) {
		if en.Kind == KindSuspectCommit {
			suspects = append(suspects, en)
		}
	})
	at := e.now.Add(3 * time.Second)
	for i := range evs {
		evs[i].At, evs[i].RespondedAt = at, at.Add(time.Millisecond)
		e.add(&evs[i])
	}
	if len(suspects) != 100 {
		t.Fatalf("got %d suspect commits; want 100", len(suspects))
	}
	for _, s := range suspects {
		if s.Fields["owner"] == "" || len(s.Fields["reasons"].([]string)) != 1 {
			t.Fatalf("got %s; want one reason and an owner", s.Text)
		}
	}
}

// TestSuspectCommitsBounded: a generation keeps its first maxSuspects
// suspect commits and counts the others, which are all still told as
// entries: a faulty client committing revoked partitions every second
// for as long as the generation lasts must not grow the timeline.
func TestSuspectCommitsBounded(t *testing.T) {
	told := 0
	e, evs := suspectCommits(10, func(en Entry) {
		if en.Kind == KindSuspectCommit {
			told++
		}
	})
	at := e.now
	for range 3 { // 100 suspects a second
		at = at.Add(time.Second)
		for i := range evs {
			ev := evs[i]
			ev.At, ev.RespondedAt = at, at.Add(time.Millisecond)
			e.add(&ev)
		}
	}
	r := e.Report()
	if len(r.Groups) != 1 || told != 300 {
		t.Fatalf("%d groups, %d suspect commits told; want 1 group and 300", len(r.Groups), told)
	}
	kept, dropped := 0, ""
	for _, gen := range r.Groups[0].Generations {
		kept += len(gen.SuspectCommits)
		for _, u := range gen.Unknown {
			if u.What == "droppedSuspectCommits" {
				dropped = u.Why
			}
		}
	}
	if kept != maxSuspects || !strings.HasPrefix(dropped, "200 more suspect commits") {
		t.Errorf("kept %d suspect commits, dropped %q; want %d kept and 200 more counted", kept, dropped, maxSuspects)
	}
}

// BenchmarkViews measures reading the views of groups that keep frozen
// generations, as the diagnosis reads a group's after its entries: the
// synth mix's groups after two hours, ten generations kept.
func BenchmarkViews(b *testing.B) {
	e := NewRetaining(Config{MaxGenerations: 10}, Retention{Generations: 10})
	o := synth.Options{Seed: 7, Groups: 20, MaxMembers: 8, Mix: synth.RebalanceHeavy, Heartbeat: 30 * time.Second, Jobs: 4}
	feedSynth(o, 2*time.Hour, 0, func(_ int, evs []decode.Event) { e.AddEvents(evs) })
	frozen := 0
	for _, g := range e.groups {
		for _, gen := range g.gens {
			if gen.frozen != nil {
				frozen++
			}
		}
	}
	if frozen < 20 {
		b.Fatalf("%d frozen generations, want at least 20", frozen)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Views(nil)
	}
}
