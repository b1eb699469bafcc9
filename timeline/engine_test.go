package timeline

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

type scenario struct {
	name    string
	cfg     Config
	script  func() *script
	closeAt float64
	check   func(t *testing.T, entries []Entry, r *Report)
}

var scenarios = []scenario{
	{
		name: "member id required and retry count as one join",
		script: func() *script {
			return twoMembers("g")
		},
		closeAt: 10,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g1 := genOf(t, r, "g", 1)
			if len(g1.Members) != 2 {
				t.Fatalf("gen 1 members = %d; want 2", len(g1.Members))
			}
			b := memberOf(t, g1, "B-1")
			if !b.JoinRetried || b.Status != "joined" || *b.JoinedAt != stamp(sec(0.002)) {
				t.Errorf("B retried %v status %q joinedAt %v; want true, joined, first attempt %s", b.JoinRetried, b.Status, *b.JoinedAt, stamp(sec(0.002)))
			}
			if n := kinds(entries)[KindMemberJoined]; n != 2 {
				t.Errorf("member_joined entries = %d; want 2", n)
			}
			if len(r.Groups[0].Generations) != 1 {
				t.Errorf("generations = %d; want 1", len(r.Groups[0].Generations))
			}
		},
	},
	{
		name: "leave with reason",
		script: func() *script {
			s := twoMembers("g")
			s.leave(cB, 10, 10.001, "B-1", "consumer poll timeout has expired.")
			s.hb(cA, 10.5, 10.501, "A-1", 1, errRebalanceInProgress)
			s.join(cA, 10.6, 10.602, jg("A-1", 2, "A-1", "A-1"))
			all := tp("round_topic", 0, 1, 2)
			s.sync(cA, 10.603, 10.604, "A-1", 2, all, map[string][]decode.TopicPartitions{"A-1": all})
			return s
		},
		closeAt: 11,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g2 := genOf(t, r, "g", 2)
			want := TriggerReport{Kind: TriggerMemberLeft, Member: "B-1", Reason: "consumer poll timeout has expired.", At: ptr(stamp(sec(10)))}
			if !reflect.DeepEqual(g2.Trigger, want) {
				t.Errorf("trigger = %+v; want %+v", g2.Trigger, want)
			}
			if len(g2.Departed) != 1 || g2.Departed[0].How != DepartLeft || g2.Departed[0].MemberID != "B-1" {
				t.Errorf("departed = %+v; want B-1 left", g2.Departed)
			}
			if a := memberOf(t, g2, "A-1"); !reflect.DeepEqual(a.Added, map[string][]int32{"round_topic": {2}}) {
				t.Errorf("A added = %v; want round_topic [2]", a.Added)
			}
			if e := findEntry(entries, KindMemberLeft, `"consumer poll timeout has expired."`); e == nil {
				t.Errorf("no member_left entry with the reason")
			}
		},
	},
	{
		name: "session timeout",
		script: func() *script {
			s := twoMembers("g")
			s.hbs(cA, "A-1", 1, 12, 33) // B's last heartbeat was at 9 s: it expires at 19 s
			s.hb(cA, 33, 33.001, "A-1", 1, errRebalanceInProgress)
			s.join(cA, 33.1, 33.102, jg("A-1", 2, "A-1", "A-1"))
			all := tp("round_topic", 0, 1, 2)
			s.sync(cA, 33.103, 33.104, "A-1", 2, all, map[string][]decode.TopicPartitions{"A-1": all})
			return s
		},
		closeAt: 34,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g2 := genOf(t, r, "g", 2)
			if g2.Trigger.Kind != TriggerSessionTimeout || g2.Trigger.Member != "B-1" || *g2.Trigger.At != stamp(sec(19)) {
				t.Errorf("trigger = %+v; want session_timeout B-1 at 19 s", g2.Trigger)
			}
			if len(g2.Departed) != 1 || g2.Departed[0].How != DepartSessionTimeout {
				t.Errorf("departed = %+v; want B-1 session_timeout", g2.Departed)
			}
			if !reflect.DeepEqual(g2.Departed[0].Partitions, map[string][]int32{"round_topic": {2}}) {
				t.Errorf("departed partitions = %v; want round_topic [2]", g2.Departed[0].Partitions)
			}
			if findEntry(entries, KindSessionExpired, "session of B-1 timed out") == nil {
				t.Errorf("no session_expired entry for B-1")
			}
		},
	},
	{
		name: "session timeout of the last member empties the group",
		script: func() *script {
			s := newScript("g")
			s.memberIDRequired(cA, 0, 0.001, "A-1")
			s.join(cA, 0.002, 0.010, jg("A-1", 1, "A-1", "A-1"))
			all := tp("round_topic", 0, 1, 2)
			s.sync(cA, 0.011, 0.012, "A-1", 1, all, map[string][]decode.TopicPartitions{"A-1": all})
			s.hbs(cA, "A-1", 1, 3, 7)
			return s
		},
		closeAt: 30,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g2 := genOf(t, r, "g", 2)
			if g2.Status != "empty" || g2.Trigger.Kind != TriggerSessionTimeout || len(g2.Departed) != 1 {
				t.Errorf("gen 2 = %s trigger %+v departed %+v; want empty, session_timeout, A-1", g2.Status, g2.Trigger, g2.Departed)
			}
			if kinds(entries)[KindGroupEmpty] != 1 {
				t.Errorf("group_empty entries = %d; want 1", kinds(entries)[KindGroupEmpty])
			}
		},
	},
	{
		name: "subscription change",
		script: func() *script {
			s := twoMembers("g")
			j := jg("B-1", 2, "A-1")
			j.Protocols[0].Subscription = consumerSub("round_topic", "other_topic")
			s.join(cB, 10, 10.3, j)
			s.hb(cA, 10.1, 10.101, "A-1", 1, errRebalanceInProgress)
			s.join(cA, 10.2, 10.3, jg("A-1", 2, "A-1", "A-1", "B-1"))
			return s
		},
		closeAt: 11,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g2 := genOf(t, r, "g", 2)
			if g2.Trigger.Kind != TriggerSubscriptionChanged || g2.Trigger.Member != "B-1" || g2.Trigger.Reason != "[round_topic] → [other_topic round_topic]" {
				t.Errorf("trigger = %+v; want subscription_changed B-1 [round_topic] → [other_topic round_topic]", g2.Trigger)
			}
		},
	},
	{
		name: "leader leaves: new leader and why",
		script: func() *script {
			s := twoMembers("g")
			s.leave(cA, 10, 10.001, "A-1", "")
			s.hb(cB, 10.1, 10.101, "B-1", 1, errRebalanceInProgress)
			s.join(cB, 10.2, 10.3, jg("B-1", 2, "B-1", "B-1"))
			return s
		},
		closeAt: 11,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g2 := genOf(t, r, "g", 2)
			want := &LeaderChangeReport{Previous: "A-1", Reason: "the previous leader left"}
			if !reflect.DeepEqual(g2.LeaderChange, want) || g2.Leader != "B-1" {
				t.Errorf("leader %s change %+v; want B-1, %+v", g2.Leader, g2.LeaderChange, want)
			}
			if findEntry(entries, KindLeader, "was A-1: the previous leader left") == nil {
				t.Errorf("no leader entry explaining the change")
			}
		},
	},
	{
		name: "member dropped at the rebalance deadline",
		script: func() *script {
			s := twoMembers("g")
			s.memberIDRequired(cC, 10, 10.001, "C-1")
			s.join(cA, 10.5, 40.002, jg("A-1", 2, "A-1", "A-1", "C-1"))
			s.join(cC, 10.002, 40.002, jg("C-1", 2, "A-1"))
			for t := 10.2; t < 40; t += 3 {
				s.hb(cB, t, t+0.001, "B-1", 1, errRebalanceInProgress) // B never rejoins
			}
			return s
		},
		closeAt: 41,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g2 := genOf(t, r, "g", 2)
			if len(g2.Departed) != 1 || g2.Departed[0].How != DepartDropped || g2.Departed[0].MemberID != "B-1" {
				t.Errorf("departed = %+v; want B-1 dropped_at_deadline", g2.Departed)
			}
			if g2.Trigger.Kind != TriggerMemberJoined || *g2.RebalanceTimeoutMs != 30000 {
				t.Errorf("trigger %s rebalance timeout %v; want member_joined, 30000", g2.Trigger.Kind, *g2.RebalanceTimeoutMs)
			}
			if findEntry(entries, KindMemberDropped, "did not rejoin before the join phase ended (rebalance timeout 30 s)") == nil {
				t.Errorf("no member_dropped entry")
			}
		},
	},
	{
		name:   "cooperative two rounds linked",
		script: cooperativeScript,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g2, g3 := genOf(t, r, "coop", 2), genOf(t, r, "coop", 3)
			if g2.Mode != ModeCooperative || !reflect.DeepEqual(g2.Unassigned, map[string][]int32{"round_topic": {2}}) {
				t.Errorf("gen 2 mode %s unassigned %v; want cooperative, round_topic [2]", g2.Mode, g2.Unassigned)
			}
			if !reflect.DeepEqual(g2.MembersWithNothing, []string{"B-1"}) {
				t.Errorf("gen 2 members with nothing = %v; want [B-1]", g2.MembersWithNothing)
			}
			if g3.Trigger.Kind != TriggerFollowUp || g3.Trigger.Member != "A-1" || g3.FollowUpOf == nil || *g3.FollowUpOf != 2 || g3.FollowUpChain != 1 {
				t.Errorf("gen 3 trigger %+v followUpOf %v chain %d; want follow-up of 2 by A-1, chain 1", g3.Trigger, g3.FollowUpOf, g3.FollowUpChain)
			}
			if b := memberOf(t, g3, "B-1"); !reflect.DeepEqual(b.Added, map[string][]int32{"round_topic": {2}}) {
				t.Errorf("gen 3 B added = %v; want round_topic [2]", b.Added)
			}
			if a := memberOf(t, g2, "A-1"); !reflect.DeepEqual(a.OwnedPartitions, map[string][]int32{"round_topic": {0, 1, 2}}) {
				t.Errorf("gen 2 A owned = %v; want round_topic [0 1 2]", a.OwnedPartitions)
			}
			if g3.Unsettled != "" || kinds(entries)[KindUnsettled] != 0 {
				t.Errorf("unsettled %q; want settled", g3.Unsettled)
			}
		},
	},
	{
		name: "cooperative revocation never followed up is unsettled",
		script: func() *script {
			s := cooperativeScript()
			s.evs = s.evs[:len(s.evs)-4] // drop the second round
			return s
		},
		closeAt: 20,
		check: func(t *testing.T, entries []Entry, r *Report) {
			if g2 := genOf(t, r, "coop", 2); !strings.Contains(g2.Unsettled, "never reassigned") {
				t.Errorf("gen 2 unsettled = %q; want never reassigned", g2.Unsettled)
			}
		},
	},
	{
		name: "static member restart without rebalance",
		script: func() *script {
			s := newScript("static")
			for _, m := range []struct {
				c    client
				id   string
				inst string
				req  float64
			}{{cA, "inst-a-1", "inst-a", 0}, {cB, "inst-b-1", "inst-b", 0.001}} {
				j := jg("", 1, "inst-a-1")
				if m.id == "inst-a-1" {
					j = jg("", 1, "inst-a-1", "inst-a-1", "inst-b-1")
				}
				j.InstanceID, j.AssignedMemberID = m.inst, m.id
				s.join(m.c, m.req, 0.010, j)
			}
			plan := map[string][]decode.TopicPartitions{"inst-a-1": tp("round_topic", 0, 1), "inst-b-1": tp("round_topic", 2)}
			s.sync(cA, 0.011, 0.012, "inst-a-1", 1, plan["inst-a-1"], plan)
			s.sync(cB, 0.011, 0.013, "inst-b-1", 1, plan["inst-b-1"], nil)
			s.hbs(cB, "inst-b-1", 1, 3, 30)
			s.hbs(cA, "inst-a-1", 1, 3, 10)
			// A restarts within its session timeout with the same instance id.
			restarted := client{"consumer-A", "127.0.0.1:50099"}
			j := jg("", 1, "inst-a-2")
			j.InstanceID, j.AssignedMemberID = "inst-a", "inst-a-2"
			s.join(restarted, 12, 12.001, j)
			s.sync(restarted, 12.002, 12.003, "inst-a-2", 1, tp("round_topic", 0, 1), nil)
			s.hbs(restarted, "inst-a-2", 1, 15, 30)
			return s
		},
		closeAt: 30,
		check: func(t *testing.T, entries []Entry, r *Report) {
			if n := len(r.Groups[0].Generations); n != 1 {
				t.Fatalf("generations = %d; want 1 (no rebalance)", n)
			}
			g1 := genOf(t, r, "static", 1)
			want := []RejoinReport{{At: stamp(sec(12)), MemberID: "inst-a-2", InstanceID: "inst-a", Replaces: "inst-a-1",
				ClientID: "consumer-A", ClientAddr: "127.0.0.1:50099"}}
			if !reflect.DeepEqual(g1.RejoinsWithoutRebalance, want) {
				t.Errorf("rejoins = %+v; want %+v", g1.RejoinsWithoutRebalance, want)
			}
			if old := memberOf(t, g1, "inst-a-1"); old.ReplacedBy != "inst-a-2" {
				t.Errorf("inst-a-1 replacedBy = %q; want inst-a-2", old.ReplacedBy)
			}
			if g1.Leader != "inst-a-2" {
				t.Errorf("leader = %q; want inst-a-2 (took over the static leader's place)", g1.Leader)
			}
			if findEntry(entries, KindStaticRejoin, "no rebalance") == nil {
				t.Errorf("no rejoin entry")
			}
			if kinds(entries)[KindRebalanceStarted] != 1 || kinds(entries)[KindSessionExpired] != 0 {
				t.Errorf("entries %v; want one rebalance_started (gen 1) and no session expiry", kinds(entries))
			}
		},
	},
	{
		name: "static member crash loop keeps the first rejoins",
		script: func() *script {
			s := newScript("loop")
			j := jg("", 1, "inst-a-1", "inst-a-1")
			j.InstanceID, j.AssignedMemberID = "inst-a", "inst-a-1"
			s.join(cA, 0, 0.010, j)
			s.sync(cA, 0.011, 0.012, "inst-a-1", 1, tp("round_topic", 0, 1), map[string][]decode.TopicPartitions{"inst-a-1": tp("round_topic", 0, 1)})
			for k := 2; k <= 301; k++ { // restarts every 100 ms, within the session timeout
				at := 1 + float64(k)/10
				id := fmt.Sprintf("inst-a-%d", k)
				j := jg("", 1, id)
				j.InstanceID, j.AssignedMemberID = "inst-a", id
				s.join(cA, at, at+0.001, j)
				s.sync(cA, at+0.002, at+0.003, id, 1, tp("round_topic", 0, 1), nil)
			}
			return s
		},
		closeAt: 32,
		check: func(t *testing.T, entries []Entry, r *Report) {
			if n := len(r.Groups[0].Generations); n != 1 {
				t.Fatalf("generations = %d; want 1 (no rebalance)", n)
			}
			g1 := genOf(t, r, "loop", 1)
			if n := kinds(entries)[KindStaticRejoin]; n != 300 {
				t.Errorf("%d rejoin entries; want 300, one per restart", n)
			}
			if n := len(g1.RejoinsWithoutRebalance); n != maxRejoins {
				t.Errorf("%d rejoins kept; want %d", n, maxRejoins)
			}
			dropped := ""
			for _, u := range g1.Unknown {
				if u.What == "droppedRejoins" {
					dropped = u.Why
				}
			}
			if !strings.HasPrefix(dropped, "200 more rejoins") {
				t.Errorf("dropped = %q; want 200 more rejoins counted", dropped)
			}
			// inst-a-1, the 100 replacements kept, and the current member.
			if n := len(g1.Members); n != 2+maxRejoins {
				t.Errorf("%d members; want %d", n, 2+maxRejoins)
			}
			last := memberOf(t, g1, "inst-a-301")
			if last.Replaces != "inst-a-300" || g1.Leader != "inst-a-301" || len(last.Assignment) == 0 {
				t.Errorf("current member %+v, leader %s; want inst-a-301 replacing inst-a-300, leading, with the assignment", last, g1.Leader)
			}
		},
	},
	{
		name: "failed commits flagged",
		script: func() *script {
			s := twoMembers("g")
			s.memberIDRequired(cC, 10, 10.001, "C-1")
			s.hb(cA, 10.2, 10.201, "A-1", 1, errRebalanceInProgress)
			s.commit(cA, 10.3, 10.305, "A-1", 1, "round_topic", map[int32]int64{0: 7, 1: 8}, nil)
			s.hb(cB, 10.4, 10.401, "B-1", 1, errRebalanceInProgress)
			s.join(cA, 10.5, 10.6, jg("A-1", 2, "A-1", "A-1", "B-1", "C-1"))
			s.join(cC, 10.002, 10.6, jg("C-1", 2, "A-1"))
			s.join(cB, 10.45, 10.6, jg("B-1", 2, "A-1"))
			// B commits while the group completes the rebalance: 27.
			s.commit(cB, 10.61, 10.612, "B-1", 1, "round_topic", map[int32]int64{2: 30}, map[int32]int16{2: errRebalanceInProgress})
			plan := map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0), "B-1": tp("round_topic", 1), "C-1": tp("round_topic", 2)}
			s.sync(cA, 10.62, 10.63, "A-1", 2, plan["A-1"], plan)
			s.sync(cB, 10.62, 10.631, "B-1", 2, plan["B-1"], nil)
			s.sync(cC, 10.62, 10.632, "C-1", 2, plan["C-1"], nil)
			// Later, a commit with the old generation and one from an unknown member.
			s.commit(cB, 11, 11.002, "B-1", 1, "round_topic", map[int32]int64{1: 31}, map[int32]int16{1: errIllegalGeneration})
			s.commit(cB, 11.1, 11.102, "B-0", 2, "round_topic", map[int32]int64{1: 31}, map[int32]int16{1: errUnknownMemberID})
			return s
		},
		closeAt: 12,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g2 := genOf(t, r, "g", 2)
			if len(g2.CommitsDuringRevocation) != 2 {
				t.Fatalf("commits during revocation = %d; want 2", len(g2.CommitsDuringRevocation))
			}
			ok, failed := g2.CommitsDuringRevocation[0], g2.CommitsDuringRevocation[1]
			if ok.Result != "ok" || ok.Errors != nil {
				t.Errorf("A's commit = %+v; want ok without errors", ok)
			}
			if !failed.Failed || failed.Errors["round_topic"][2] != "REBALANCE_IN_PROGRESS" {
				t.Errorf("B's commit = %+v; want failed with REBALANCE_IN_PROGRESS", failed)
			}
			for _, name := range []string{"REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"} {
				if e := findEntry(entries, KindCommit, name); e == nil || !strings.Contains(e.Text, "FAILED") || e.Fields["failed"] != true {
					t.Errorf("no FAILED commit entry naming %s", name)
				}
			}
		},
	},
	{
		name: "suspect backward commit of a partition not owned",
		script: func() *script {
			s := seedScript()
			s.commit(cB, 25, 25.002, "B-1", 2, "round_topic", map[int32]int64{2: 40}, nil)
			s.memberIDRequired(cC, 30, 30.001, "C-1")
			s.hb(cA, 30.5, 30.501, "A-1", 2, errRebalanceInProgress)
			// A's revocation callback still holds partition 2 from gen 1.
			s.commit(cA, 30.6, 30.603, "A-1", 2, "round_topic", map[int32]int64{0: 20, 1: 15, 2: 11}, nil)
			return s
		},
		closeAt: 31,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g := r.Groups[0]
			if g.PendingRebalance == nil || g.PendingRebalance.Trigger.Member != "C-1" {
				t.Fatalf("pending rebalance = %+v; want one triggered by C-1", g.PendingRebalance)
			}
			g2 := genOf(t, r, "test_group_1", 2)
			if len(g2.SuspectCommits) != 1 {
				t.Fatalf("suspect commits = %+v; want 1", g2.SuspectCommits)
			}
			s := g2.SuspectCommits[0]
			want := SuspectReport{MemberID: "A-1", At: stamp(sec(30.6)), Generation: 2, Topic: "round_topic", Partition: 2,
				Offset: 11, CommittedOffset: ptr(int64(40)), CommittedBy: "B-1", Owner: "B-1",
				Reasons: []string{SuspectNotOwned, SuspectBackwards}}
			if !reflect.DeepEqual(s, want) {
				t.Errorf("suspect = %+v; want %+v", s, want)
			}
			if e := findEntry(entries, KindSuspectCommit, "back from 40"); e == nil {
				t.Errorf("no suspect_commit entry")
			}
		},
	},
	{
		name:   "KIP-848 epochs with topic names",
		script: kip848Script,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g := r.Groups[0]
			if g.GroupProtocol != "consumer" || len(g.Generations) != 2 {
				t.Fatalf("group protocol %s generations %d; want consumer, 2", g.GroupProtocol, len(g.Generations))
			}
			e2 := genOf(t, r, "kip848", 2)
			if e2.Trigger.Kind != TriggerMemberJoined || e2.Trigger.Member != "M2" || e2.Status != "stable" {
				t.Errorf("epoch 2 trigger %+v status %s; want member_joined M2, stable", e2.Trigger, e2.Status)
			}
			if m1 := memberOf(t, e2, "M1"); !reflect.DeepEqual(m1.Revoked, map[string][]int32{"orders": {2}}) || *m1.MemberEpoch != 2 {
				t.Errorf("M1 revoked %v epoch %d; want orders [2], 2", m1.Revoked, *m1.MemberEpoch)
			}
			if m2 := memberOf(t, e2, "M2"); !reflect.DeepEqual(m2.Assignment, map[string][]int32{"orders": {2}}) {
				t.Errorf("M2 assignment %v; want orders [2]", m2.Assignment)
			}
			var m1 ConsumerMemberReport
			for _, cm := range g.ConsumerMembers {
				if cm.MemberID == "M1" {
					m1 = cm
				}
			}
			if len(m1.Epochs) != 3 || m1.Epochs[1].Epoch != 1 || !reflect.DeepEqual(m1.Epochs[1].Revoked, map[string][]int32{"orders": {2}}) {
				t.Errorf("M1 epochs = %+v; want 3 steps, the second revoking orders [2] at epoch 1", m1.Epochs)
			}
			var m2 ConsumerMemberReport
			for _, cm := range g.ConsumerMembers {
				if cm.MemberID == "M2" {
					m2 = cm
				}
			}
			if len(m2.Fences) != 1 || m2.Fences[0].Error != "FENCED_MEMBER_EPOCH" {
				t.Errorf("M2 fences = %+v; want FENCED_MEMBER_EPOCH", m2.Fences)
			}
			if findEntry(entries, KindFenced, "FENCED_MEMBER_EPOCH") == nil {
				t.Errorf("no fenced entry")
			}
		},
		closeAt: 30,
	},
	{
		name:    "partial visibility",
		script:  partialScript,
		closeAt: 40,
		check: func(t *testing.T, entries []Entry, r *Report) {
			g5, g6 := genOf(t, r, "partial", 5), genOf(t, r, "partial", 6)
			if g5.Status != "observed" || len(g5.Unknown) == 0 || g5.StartedAt != nil {
				t.Errorf("gen 5 status %s unknown %v startedAt %v; want observed with notes and no start", g5.Status, g5.Unknown, g5.StartedAt)
			}
			b := memberOf(t, g6, "B-1")
			if b.Status != "unobserved" || b.Observed {
				t.Errorf("B status %s observed %v; want unobserved", b.Status, b.Observed)
			}
			if a := memberOf(t, g6, "A-1"); a.Added != nil || a.Revoked != nil || a.Assignment == nil {
				t.Errorf("A added %v revoked %v assignment %v; want unknown diff, known assignment", a.Added, a.Revoked, a.Assignment)
			}
			if c := memberOf(t, g6, "C-1"); !reflect.DeepEqual(c.Added, map[string][]int32{"round_topic": {2}}) {
				t.Errorf("C added %v; want round_topic [2] (a new member owned nothing)", c.Added)
			}
			if g6.Trigger.Kind != TriggerMemberJoined || g6.Trigger.Member != "C-1" {
				t.Errorf("gen 6 trigger %+v; want member_joined C-1", g6.Trigger)
			}
			g7 := genOf(t, r, "partial", 7)
			if g7.MemberListComplete || !hasUnknown(g7.Unknown, "members") {
				t.Errorf("gen 7 memberListComplete %v unknown %v; want false with a members note", g7.MemberListComplete, g7.Unknown)
			}
			if kinds(entries)[KindPartial] == 0 {
				t.Errorf("no partial entry")
			}
		},
	},
	{
		name:    "storm",
		script:  stormScript,
		closeAt: 500,
		check: func(t *testing.T, entries []Entry, r *Report) {
			st := r.Groups[0].Storms
			if len(st) != 1 || st[0].Rebalances != 3 || st[0].DominantTrigger != TriggerMemberRejoined ||
				!reflect.DeepEqual(st[0].Members, []string{"B-1"}) || st[0].Ongoing {
				t.Fatalf("storms = %+v; want one of 3 rebalances, member_rejoined by B-1, ended", st)
			}
			if kinds(entries)[KindStorm] != 1 || kinds(entries)[KindStormEnded] != 1 {
				t.Errorf("storm entries %v; want one storm and one storm_ended", kinds(entries))
			}
		},
	},
	{
		name:    "storm of a growing group",
		script:  growthScript,
		closeAt: 60,
		check: func(t *testing.T, entries []Entry, r *Report) {
			st := r.Groups[0].Storms
			if len(st) != 1 || st[0].Rebalances != 3 || st[0].Growth != 2 || !reflect.DeepEqual(st[0].Generations, []int32{2, 3, 4}) {
				t.Fatalf("storms = %+v; want one of gens 2-4, two of them growth", st)
			}
		},
	},
	{
		name:    "storm threshold is configurable",
		cfg:     Config{StormRebalances: 4},
		script:  stormScript,
		closeAt: 500,
		check: func(t *testing.T, entries []Entry, r *Report) {
			if st := r.Groups[0].Storms; len(st) != 0 {
				t.Errorf("storms = %+v; want none with a threshold of 4", st)
			}
		},
	},
}

func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			entries, r, _ := run(t, sc.cfg, sc.script().events(), sc.closeAt)
			if testing.Verbose() {
				t.Log("\n" + entryLines(entries))
			}
			sc.check(t, entries, r)
		})
	}
}

func hasUnknown(us []UnknownReport, what string) bool {
	for _, u := range us {
		if u.What == what {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// TestInterleavedGroups runs the seed scenario in three groups at once,
// shifted in time and interleaved event by event: each group's report must
// equal the one from running it alone.
func TestInterleavedGroups(t *testing.T) {
	names := []string{"g-a", "g-b", "g-c"}
	var alone [][]decode.Event
	for i, n := range names {
		evs := seedScript().events()
		for j := range evs {
			evs[j].Group = n
			shift := time.Duration(i) * 137 * time.Millisecond
			evs[j].At = evs[j].At.Add(shift)
			evs[j].RespondedAt = evs[j].RespondedAt.Add(shift)
		}
		alone = append(alone, evs)
	}
	var mixed []decode.Event
	for j := range alone[0] {
		for i := range names {
			mixed = append(mixed, alone[i][j])
		}
	}
	_, together, _ := run(t, Config{}, mixed, 40)
	if len(together.Groups) != 3 {
		t.Fatalf("groups = %d; want 3", len(together.Groups))
	}
	for i, n := range names {
		_, single, _ := run(t, Config{}, alone[i], 40)
		var a, b bytes.Buffer
		WriteJSON(&a, &Report{Groups: []GroupReport{together.Groups[i]}})
		WriteJSON(&b, single)
		if a.String() != b.String() {
			t.Errorf("group %s interleaved differs from alone:\n%s\nwant\n%s", n, a.String(), b.String())
		}
	}
}

// TestDeterministic replays every scenario twice: the JSON reports and the
// JSONL entries must be byte-identical.
func TestDeterministic(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			render := func() string {
				entries, r, _ := run(t, sc.cfg, sc.script().events(), sc.closeAt)
				var b bytes.Buffer
				if err := WriteJSON(&b, r); err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					if err := WriteEntryJSONL(&b, e); err != nil {
						t.Fatal(err)
					}
				}
				return b.String()
			}
			if a, b := render(), render(); a != b {
				t.Errorf("two runs differ")
			}
		})
	}
}

// TestReportDoesNotChangeState checks that Report, called mid-stream like
// the live admin page does, leaves the final report unchanged.
func TestReportDoesNotChangeState(t *testing.T) {
	evs := seedScript().events()
	e := New(Config{})
	for i, ev := range evs {
		e.Add(ev)
		if i%3 == 0 {
			e.Report()
		}
	}
	e.Close(sec(40))
	_, want, _ := run(t, Config{}, evs, 40)
	var a, b bytes.Buffer
	WriteJSON(&a, e.Report())
	WriteJSON(&b, want)
	if a.String() != b.String() {
		t.Errorf("report differs after intermediate Report calls")
	}
}

// TestMaxGenerations checks that old generations are dropped and the
// report says so.
func TestMaxGenerations(t *testing.T) {
	_, r, _ := run(t, Config{MaxGenerations: 2}, stormScript().events(), 500)
	g := r.Groups[0]
	if len(g.Generations) != 2 || g.Generations[0].Generation != 3 || !hasUnknown(g.Unknown, "droppedGenerations") {
		t.Errorf("generations %d (first %d), unknown %v; want 2 from gen 3 and a droppedGenerations note",
			len(g.Generations), g.Generations[0].Generation, g.Unknown)
	}
}
