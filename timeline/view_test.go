package timeline

import (
	"encoding/json"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
)

// TestViewsAgreeWithReport: over generated rebalancing traffic and the
// golden scenarios, the typed views say what the report says, field for
// field of what the views carry.
func TestViewsAgreeWithReport(t *testing.T) {
	e := New(Config{})
	dec := decode.NewDecoder()
	tr := synth.New(synth.Options{Seed: 3, Groups: 30, MaxMembers: 8, Mix: synth.RebalanceHeavy})
	var evs []decode.Event
	for range 60_000 {
		evs, _ = dec.DecodeAppend(evs[:0], tr.Next())
		e.AddEvents(evs)
	}
	e.Close(e.now)
	engines := []*Engine{e}
	suspect := seedScript() // A commits, in its revocation, an offset behind B's for B's partition
	suspect.commit(cB, 25, 25.002, "B-1", 2, "round_topic", map[int32]int64{2: 40}, nil)
	suspect.hb(cA, 30.5, 30.501, "A-1", 2, errRebalanceInProgress)
	suspect.commit(cA, 30.6, 30.603, "A-1", 2, "round_topic", map[int32]int64{0: 20, 1: 15, 2: 11}, nil)
	for _, s := range []*script{seedScript(), cooperativeScript(), kip848Script(), partialScript(), eosScript(0), shareScript(), suspect, upgradeScript()} {
		_, _, e := run(t, Config{}, s.events(), 80)
		engines = append(engines, e)
	}
	for _, sc := range scenarios {
		_, _, e := run(t, Config{}, sc.script().events(), sc.closeAt)
		engines = append(engines, e)
	}
	seen := map[string]int{}
	for _, e := range engines {
		r, views := e.Report(), e.Views(nil)
		if len(views) != len(r.Groups) {
			t.Fatalf("%d views for %d groups", len(views), len(r.Groups))
		}
		for i, v := range views {
			got, want := asJSON(t, reportOfView(v)), asJSON(t, reportFacts(r.Groups[i]))
			if got != want {
				t.Errorf("group %s: the view says\n%s\nthe report\n%s", v.Group, got, want)
			}
			for _, gen := range v.Generations {
				seen[gen.Mode]++
				seen["departed"] += len(gen.Departed)
				seen["rejoins"] += len(gen.Rejoins)
				seen["suspects"] += len(gen.Suspects)
			}
			seen["storms"] += len(v.Storms)
			seen["consumerMembers"] += len(v.ConsumerMembers)
			for _, cm := range v.ConsumerMembers {
				seen["consumerFences"] += len(cm.Fences)
			}
			seen["migrations"] += len(v.Migrations)
		}
	}
	for _, k := range []string{ModeEager, ModeCooperative, ModeConsumer, ModeShare, "departed", "rejoins", "suspects", "storms", "consumerMembers", "migrations"} {
		if seen[k] == 0 {
			t.Errorf("no %s: the traffic tests nothing of it (seen %v)", k, seen)
		}
	}
	if got := e.Views([]string{"nope"}); len(got) != 0 {
		t.Errorf("views of a group never seen: %d", len(got))
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// reportFacts is gr with only what a GroupView carries.
func reportFacts(gr GroupReport) GroupReport {
	out := GroupReport{Group: gr.Group, LastSeen: gr.LastSeen}
	for _, gen := range gr.Generations {
		g := GenerationReport{Generation: gen.Generation, Status: gen.Status, Protocol: gen.Protocol, Mode: gen.Mode,
			Leader: gen.Leader, StartedAt: gen.StartedAt, JoinCompletedAt: gen.JoinCompletedAt, StableAt: gen.StableAt,
			StopTheWorldMs: gen.StopTheWorldMs, RebalanceTimeoutMs: gen.RebalanceTimeoutMs, FollowUpOf: gen.FollowUpOf,
			Departed: gen.Departed, RejoinsWithoutRebalance: gen.RejoinsWithoutRebalance, Unassigned: gen.Unassigned,
			MembersWithNothing: gen.MembersWithNothing, SuspectCommits: gen.SuspectCommits}
		for _, m := range gen.Members {
			g.Members = append(g.Members, MemberReport{MemberID: m.MemberID, InstanceID: m.InstanceID, Status: m.Status,
				JoinedAt: m.JoinedAt, Subscription: m.Subscription, Assignment: m.Assignment, Protocol: m.Protocol})
		}
		out.Generations = append(out.Generations, g)
	}
	for _, st := range gr.Storms {
		st.Ongoing = false // the view says it by a zero Ended
		out.Storms = append(out.Storms, st)
	}
	for _, cm := range gr.ConsumerMembers {
		out.ConsumerMembers = append(out.ConsumerMembers, ConsumerMemberReport{MemberID: cm.MemberID, InstanceID: cm.InstanceID,
			ClientID: cm.ClientID, ClientAddr: cm.ClientAddr, Subscription: cm.Subscription, Active: cm.Active,
			MemberEpoch: cm.MemberEpoch, Assignment: cm.Assignment, Epochs: cm.Epochs, Fences: cm.Fences, Protocol: cm.Protocol})
	}
	out.Migrations = gr.Migrations
	return out
}

// reportOfView is what the report says of v, rendered as the report
// renders it.
func reportOfView(v GroupView) GroupReport {
	out := GroupReport{Group: v.Group, LastSeen: stamp(v.LastSeen)}
	for _, gen := range v.Generations {
		g := GenerationReport{Generation: gen.Generation, Status: gen.Status, Protocol: gen.Protocol, Mode: gen.Mode,
			Leader: gen.Leader, StartedAt: stampPtr(gen.Started), JoinCompletedAt: stampPtr(gen.JoinCompleted),
			StableAt: stampPtr(gen.Stable), StopTheWorldMs: msPtr(gen.StopTheWorld, gen.StopTheWorld >= 0),
			RebalanceTimeoutMs: msPtr(gen.RebalanceTimeout, gen.RebalanceTimeout > 0),
			Departed:           []DepartureReport{}, RejoinsWithoutRebalance: []RejoinReport{}, Unassigned: gen.Unassigned,
			MembersWithNothing: append([]string{}, gen.MembersWithNothing...), SuspectCommits: []SuspectReport{}}
		if gen.FollowUpOf != 0 {
			f := gen.FollowUpOf
			g.FollowUpOf = &f
		}
		for _, m := range gen.Members {
			g.Members = append(g.Members, MemberReport{MemberID: m.MemberID, InstanceID: m.InstanceID, Status: m.Status,
				JoinedAt: stampPtr(m.Joined), Subscription: m.Subscription, Assignment: m.Assignment, Protocol: m.Protocol})
		}
		for _, d := range gen.Departed {
			g.Departed = append(g.Departed, DepartureReport{MemberID: d.MemberID, InstanceID: d.InstanceID, How: d.How,
				Reason: d.Reason, At: stampPtr(d.At), Partitions: d.Partitions})
		}
		for _, rj := range gen.Rejoins {
			g.RejoinsWithoutRebalance = append(g.RejoinsWithoutRebalance, RejoinReport{At: stamp(rj.At), MemberID: rj.MemberID,
				InstanceID: rj.InstanceID, Replaces: rj.Replaces, ClientID: rj.ClientID, ClientAddr: rj.ClientAddr})
		}
		for _, s := range gen.Suspects {
			sr := SuspectReport{MemberID: s.MemberID, At: stamp(s.At), Generation: s.Generation, Topic: s.Topic,
				Partition: s.Partition, Offset: s.Offset, CommittedBy: s.CommittedBy, Owner: s.Owner, Reasons: s.Reasons}
			if s.CommittedKnown {
				c := s.Committed
				sr.CommittedOffset = &c
			}
			g.SuspectCommits = append(g.SuspectCommits, sr)
		}
		out.Generations = append(out.Generations, g)
	}
	for _, st := range v.Storms {
		sr := StormReport{From: stamp(st.From), To: stamp(st.To), Rebalances: st.Rebalances, Generations: st.Generations,
			DominantTrigger: st.DominantTrigger, Triggers: st.Triggers, Growth: st.Growth, Members: st.Members}
		if sr.Members == nil {
			sr.Members = []string{}
		}
		if !st.Ended.IsZero() {
			sr.EndedAt = stampPtr(st.Ended)
		}
		out.Storms = append(out.Storms, sr)
	}
	for _, cm := range v.ConsumerMembers {
		r := ConsumerMemberReport{MemberID: cm.MemberID, InstanceID: cm.InstanceID, ClientID: cm.ClientID,
			ClientAddr: cm.ClientAddr, Subscription: cm.Subscription, Active: cm.Active, MemberEpoch: cm.MemberEpoch,
			Assignment: cm.Assignment, Epochs: []EpochReport{}, Fences: []FenceReport{}, Protocol: cm.Protocol}
		for _, s := range cm.Steps {
			r.Epochs = append(r.Epochs, EpochReport{At: stamp(s.At), Epoch: s.Epoch, Assignment: s.Assigned, Added: s.Added, Revoked: s.Revoked})
		}
		for _, f := range cm.Fences {
			r.Fences = append(r.Fences, FenceReport{At: stamp(f.At), Epoch: f.Epoch, Error: f.Error})
		}
		out.ConsumerMembers = append(out.ConsumerMembers, r)
	}
	out.Migrations = []MigrationReport{}
	for _, mg := range v.Migrations {
		mr := MigrationReport{Direction: mg.Direction, StartedAt: stamp(mg.Started), StartedBy: mg.StartedBy,
			ConvertedAt: stampPtr(mg.Converted), ConvertedBy: mg.ConvertedBy, CompletedAt: stampPtr(mg.Completed),
			LastMember: mg.LastMember}
		if !mg.Converted.IsZero() {
			n := mg.Generation
			mr.Generation = &n
		}
		out.Migrations = append(out.Migrations, mr)
	}
	return out
}
