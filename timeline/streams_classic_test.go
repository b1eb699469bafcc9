package timeline

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

// classicStreamsScript: a Kafka Streams application on the classic
// protocol, one subtopology over input 0-2. Instance A forms the group
// alone (tasks 0_0 0_1 0_2). B joins at 10 s: the leader keeps every task
// on A, where its state is, gives B task 0_2 as a warm-up (standby) and
// schedules a KIP-441 probing rebalance for 60 s in A's assignment. At 60 s
// A rejoins for it; B has caught up, so 0_2 moves: A loses it (a follow-up
// at once, to revoke it first) and B gets it in the cooperative follow-up
// at 60.5 s.
func classicStreamsScript() *script {
	s := newScript("streams-classic")
	procA := [16]byte{0xa}
	procB := [16]byte{0xb}
	sub := func(proc [16]byte, offsets ...decode.StreamsTaskOffsetSum) *decode.Subscription {
		return &decode.Subscription{Version: 3, Topics: []string{"input"}, Generation: -1,
			Streams: &decode.StreamsSubscriptionInfo{Version: 11, LatestSupportedVersion: 11,
				ProcessID: fmt.Sprintf("%x-0000-0000-0000-000000000000", proc[:4]), TaskOffsetSums: offsets}}
	}
	off := func(p int32, sum int64) decode.StreamsTaskOffsetSum {
		return decode.StreamsTaskOffsetSum{Task: decode.StreamsTaskID{Partition: p}, OffsetSum: sum}
	}
	ids := func(ps ...int32) []decode.StreamsTaskID {
		var out []decode.StreamsTaskID
		for _, p := range ps {
			out = append(out, decode.StreamsTaskID{Partition: p})
		}
		return out
	}
	subs := map[string]*decode.Subscription{}
	join := func(c client, req, resp float64, id string, gen int32, leader, reason string, members ...string) {
		j := jg(id, gen, leader, members...)
		j.ProtocolName, j.Reason = decode.AssignorStreams, reason
		j.Protocols = []decode.JoinProtocol{{Name: decode.AssignorStreams, Subscription: subs[id]}}
		for i := range j.Members {
			j.Members[i].Subscription = subs[j.Members[i].MemberID]
		}
		s.join(c, req, resp, j)
	}
	type grant struct {
		active, standby []int32
		next            int64
	}
	sync := func(c client, req, resp float64, id string, gen int32, plan map[string]grant) {
		asg := func(g grant) *decode.Assignment {
			return &decode.Assignment{Version: 3, Partitions: tp("input", g.active...),
				Streams: &decode.StreamsAssignmentInfo{Version: 11, CommonlySupportedVersion: 11,
					Active: ids(g.active...), Standby: ids(g.standby...), NextRebalanceMs: g.next}}
		}
		sg := &decode.SyncGroup{MemberID: id, Generation: gen, ProtocolType: "consumer", ProtocolName: decode.AssignorStreams,
			Assignment: asg(plan[id])}
		if c == cA {
			for _, m := range sortedKeys(plan) {
				sg.Plan = append(sg.Plan, decode.MemberAssignment{MemberID: m, Assignment: asg(plan[m])})
			}
		}
		s.ev(c, 14, req, resp).SyncGroup = sg
	}
	none := decode.StreamsNoRebalance
	probeAt := sec(60).UnixMilli()

	subs["A-1"] = sub(procA)
	s.memberIDRequired(cA, 0, 0.001, "A-1")
	join(cA, 0.002, 0.01, "A-1", 1, "A-1", "", "A-1")
	sync(cA, 0.011, 0.012, "A-1", 1, map[string]grant{"A-1": {active: []int32{0, 1, 2}, next: none}})
	s.hbs(cA, "A-1", 1, 1, 10)

	subs["A-1"] = sub(procA, off(0, -2), off(1, -2), off(2, -2))
	subs["B-1"] = sub(procB)
	s.memberIDRequired(cB, 10, 10.001, "B-1")
	s.hb(cA, 10.2, 10.201, "A-1", 1, errRebalanceInProgress)
	join(cB, 10.002, 10.3, "B-1", 2, "A-1", "")
	join(cA, 10.25, 10.3, "A-1", 2, "A-1", "", "A-1", "B-1")
	plan2 := map[string]grant{"A-1": {active: []int32{0, 1, 2}, next: probeAt}, "B-1": {standby: []int32{2}, next: none}}
	sync(cA, 10.31, 10.32, "A-1", 2, plan2)
	sync(cB, 10.31, 10.33, "B-1", 2, plan2)
	s.hbs(cA, "A-1", 2, 11, 60)
	s.hbs(cB, "B-1", 2, 11, 60)

	subs["B-1"] = sub(procB, off(2, 5000))
	join(cA, 60.0, 60.2, "A-1", 3, "A-1", fmt.Sprintf("triggered followup rebalance scheduled for %d", probeAt), "A-1", "B-1")
	join(cB, 60.1, 60.2, "B-1", 3, "A-1", "")
	plan3 := map[string]grant{"A-1": {active: []int32{0, 1}, next: 0}, "B-1": {standby: []int32{2}, next: none}}
	sync(cA, 60.21, 60.22, "A-1", 3, plan3)
	sync(cB, 60.21, 60.23, "B-1", 3, plan3)

	subs["A-1"] = sub(procA, off(0, -2), off(1, -2), off(2, 5000))
	join(cA, 60.3, 60.5, "A-1", 4, "A-1", "triggered followup rebalance scheduled for 0", "A-1", "B-1")
	join(cB, 60.4, 60.5, "B-1", 4, "A-1", "")
	plan4 := map[string]grant{"A-1": {active: []int32{0, 1}, standby: []int32{2}, next: none}, "B-1": {active: []int32{2}, next: none}}
	sync(cA, 60.51, 60.52, "A-1", 4, plan4)
	sync(cB, 60.51, 60.53, "B-1", 4, plan4)
	s.hbs(cA, "A-1", 4, 61, 70)
	s.hbs(cB, "B-1", 4, 61, 70)
	return s
}

// TestClassicStreams checks a classic Streams group's story: the tasks per
// generation and what moved, the probing rebalance as its own trigger,
// kept out of the storm count.
func TestClassicStreams(t *testing.T) {
	_, r, _ := run(t, Config{StormRebalances: 3}, classicStreamsScript().events(), 70)
	if len(r.Groups) != 1 {
		t.Fatalf("groups: %d", len(r.Groups))
	}
	g := r.Groups[0]
	var triggers []string
	for _, gen := range g.Generations {
		triggers = append(triggers, gen.Trigger.Kind)
	}
	want := []string{TriggerUnknown, TriggerMemberJoined, TriggerProbingRebalance, TriggerFollowUp}
	if len(triggers) != 4 || !slices.Equal(triggers[1:], want[1:]) {
		t.Fatalf("triggers %v, want %v", triggers, want)
	}
	if len(g.Storms) != 0 {
		t.Errorf("three rebalances, one of them probing, made a storm: %+v", g.Storms)
	}
	member := func(gen int, id string) *ClassicStreamsReport {
		for _, m := range g.Generations[gen-1].Members {
			if m.MemberID == id {
				if m.Streams == nil {
					t.Fatalf("gen %d %s: no streams", gen, id)
				}
				return m.Streams
			}
		}
		t.Fatalf("gen %d: no member %s", gen, id)
		return nil
	}
	for _, c := range []struct {
		gen                           int
		id                            string
		active, standby, gained, lost string
		next                          bool
	}{
		{1, "A-1", "0_0 0_1 0_2", "", "0_0 0_1 0_2", "", false},
		{2, "A-1", "0_0 0_1 0_2", "", "", "", true},
		{2, "B-1", "", "0_2", "", "", false},
		{3, "A-1", "0_0 0_1", "", "", "0_2", true},
		{4, "A-1", "0_0 0_1", "0_2", "", "", false},
		{4, "B-1", "0_2", "", "0_2", "", false},
	} {
		m := member(c.gen, c.id)
		got := []string{strings.Join(m.Active, " "), strings.Join(m.Standby, " "), strings.Join(m.ActiveGained, " "), strings.Join(m.ActiveLost, " ")}
		if want := []string{c.active, c.standby, c.gained, c.lost}; !slices.Equal(got, want) {
			t.Errorf("gen %d %s: active/standby/gained/lost %q, want %q", c.gen, c.id, got, want)
		}
		if (m.NextRebalanceAt != nil) != c.next {
			t.Errorf("gen %d %s: nextRebalanceAt %v, want set %v", c.gen, c.id, m.NextRebalanceAt, c.next)
		}
	}
	if m := member(3, "B-1"); m.TaskOffsetSums["0_2"] != 5000 || m.ProcessID != "0b000000-0000-0000-0000-000000000000" {
		t.Errorf("gen 3 B-1 subscription: %+v", m)
	}
	if at := member(2, "A-1").NextRebalanceAt; *at != stamp(sec(60)) {
		t.Errorf("gen 2 A-1 probing rebalance at %s, want %s", *at, stamp(sec(60)))
	}
	var text bytes.Buffer
	if err := WriteText(&text, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"tasks active 0_2 (+0_2)", "tasks active 0_0 0_1 (-0_2)", "trigger: probing rebalance A-1", "follow-up rebalance at 14:03:00.000"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text timeline lacks %q:\n%s", s, text.String())
		}
	}
}

// TestClassicStreamsStormCounting checks that the same three rebalances
// make a storm when the third is an ordinary rejoin: the probing trigger,
// not the threshold, kept the storm away above.
func TestClassicStreamsStormCounting(t *testing.T) {
	s := classicStreamsScript()
	for i := range s.evs {
		if j := s.evs[i].JoinGroup; j != nil && strings.HasPrefix(j.Reason, probingPrefix) && !strings.HasSuffix(j.Reason, " 0") {
			j2 := *j
			j2.Reason = "restarted"
			s.evs[i].JoinGroup = &j2
		}
	}
	_, r, _ := run(t, Config{StormRebalances: 3}, s.events(), 70)
	g := r.Groups[0]
	if k := g.Generations[2].Trigger.Kind; k != TriggerLeaderRejoined {
		t.Fatalf("gen 3 trigger %s, want %s", k, TriggerLeaderRejoined)
	}
	if len(g.Storms) != 1 {
		t.Errorf("storms %d, want 1", len(g.Storms))
	}
}

// TestClassicStreamsProbingWithoutReason checks the probing trigger of a
// member that gives no JoinGroup reason (JoinGroup before v8, or a client
// that sends none): its rejoin is the probing rebalance when it comes once
// the time its previous assignment scheduled has passed, and an ordinary
// rejoin otherwise.
func TestClassicStreamsProbingWithoutReason(t *testing.T) {
	none := decode.StreamsNoRebalance
	for _, c := range []struct {
		name   string
		next   int64 // A-1's nextRebalanceMs in gen 2; 0 keeps the script's 60 s
		gen3   string
		storms int
	}{
		{"at the scheduled time", 0, TriggerProbingRebalance, 0},
		{"after the scheduled time", sec(59.5).UnixMilli(), TriggerProbingRebalance, 0},
		{"before the scheduled time", sec(120).UnixMilli(), TriggerLeaderRejoined, 1},
		{"none scheduled", none, TriggerLeaderRejoined, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := classicStreamsScript()
			for i := range s.evs {
				if j := s.evs[i].JoinGroup; j != nil {
					j2 := *j
					j2.Reason = ""
					s.evs[i].JoinGroup = &j2
				}
				sg := s.evs[i].SyncGroup
				if sg == nil || sg.Generation != 2 || c.next == 0 {
					continue
				}
				if sg.MemberID == "A-1" {
					sg.Assignment.Streams.NextRebalanceMs = c.next
				}
				for _, p := range sg.Plan {
					if p.MemberID == "A-1" {
						p.Assignment.Streams.NextRebalanceMs = c.next
					}
				}
			}
			_, r, _ := run(t, Config{StormRebalances: 3}, s.events(), 70)
			g := r.Groups[0]
			var got []string
			for _, gen := range g.Generations {
				got = append(got, gen.Trigger.Kind)
			}
			want := []string{TriggerMemberJoined, c.gen3, TriggerFollowUp}
			if len(got) != 4 || !slices.Equal(got[1:], want) {
				t.Fatalf("triggers %v, want [_ %v]", got, want)
			}
			if tr := g.Generations[2].Trigger; tr.Member != "A-1" {
				t.Errorf("gen 3 trigger member %q, want A-1", tr.Member)
			}
			if len(g.Storms) != c.storms {
				t.Errorf("storms %d, want %d", len(g.Storms), c.storms)
			}
		})
	}
}

// TestClassicStreamsFollowUpOfNewOwner checks the hand-over's follow-up
// started by the task's new owner, whose assignment scheduled it: B,
// which revoked nothing, rejoins before A, with the reason "triggered
// followup rebalance scheduled for 0" or, without a reason, once its
// assignment said so; the generation is the cooperative follow-up either
// way.
func TestClassicStreamsFollowUpOfNewOwner(t *testing.T) {
	for _, reason := range []bool{true, false} {
		s := classicStreamsScript()
		for i := range s.evs {
			ev := &s.evs[i]
			if sg := ev.SyncGroup; sg != nil && sg.Generation == 3 {
				for _, a := range append([]*decode.Assignment{sg.Assignment}, planAssignments(sg)...) {
					a.Streams.NextRebalanceMs = decode.StreamsNoRebalance
				}
				if sg.MemberID == "B-1" {
					sg.Assignment.Streams.NextRebalanceMs = 0
				}
				for _, p := range sg.Plan {
					if p.MemberID == "B-1" {
						p.Assignment.Streams.NextRebalanceMs = 0
					}
				}
			}
			if j := ev.JoinGroup; j != nil && j.Generation == 4 {
				j2 := *j
				j2.Reason = ""
				if j.MemberID == "B-1" {
					// B first, as in e2e 53 on Kafka 3.9.2.
					ev.At = sec(60.25)
					if reason {
						j2.Reason = probingPrefix + "0"
					}
				}
				ev.JoinGroup = &j2
			}
		}
		slices.SortStableFunc(s.evs, func(a, b decode.Event) int { return a.At.Compare(b.At) })
		_, r, _ := run(t, Config{StormRebalances: 3}, s.events(), 70)
		g := r.Groups[0]
		if tr := g.Generations[3].Trigger; tr.Kind != TriggerFollowUp || tr.Member != "B-1" {
			t.Errorf("reason %v: gen 4 trigger %s by %s; want B-1's %s", reason, tr.Kind, tr.Member, TriggerFollowUp)
		}
		if f := g.Generations[3].FollowUpOf; f == nil || *f != 3 {
			t.Errorf("reason %v: gen 4 follow-up of %v; want 3", reason, f)
		}
	}
}

// planAssignments is the leader's plan's assignments in sg.
func planAssignments(sg *decode.SyncGroup) []*decode.Assignment {
	var out []*decode.Assignment
	for _, p := range sg.Plan {
		out = append(out, p.Assignment)
	}
	return out
}
