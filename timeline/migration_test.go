package timeline

import (
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// migrationWire is a group of round_topic (3 partitions) whose members
// talk either protocol: the classic helpers of script, and KIP-848
// heartbeats naming round_topic by its topic id.
type migrationWire struct {
	*script
	id [16]byte
}

func newMigrationWire(group string) *migrationWire {
	w := &migrationWire{script: newScript(group), id: [16]byte{7, 7, 7}}
	md := w.ev(cA, 3, 0, 0.0005)
	md.Group, md.Metadata = "", &decode.Metadata{Topics: []decode.MetadataTopic{{Name: "round_topic", TopicID: w.id, Partitions: 3}}}
	return w
}

// cghb is a ConsumerGroupHeartbeat of member at epoch answered at
// respEpoch with partitions ps of round_topic (nil: unchanged).
func (w *migrationWire) cghb(c client, req, resp float64, member string, epoch, respEpoch int32, ps []int32) {
	h := &decode.ConsumerGroupHeartbeat{MemberID: member, MemberEpoch: epoch, AssignedMemberID: member,
		AssignedEpoch: respEpoch, HeartbeatInterval: 5 * time.Second}
	if ps != nil {
		h.Assignment = []decode.TopicIDPartitions{{TopicID: w.id, Partitions: ps}}
	}
	if epoch == 0 {
		h.SubscribedTopicNames = []string{"round_topic"}
	}
	w.ev(c, 68, req, resp).ConsumerGroupHeartbeat = h
}

// follower is a classic member's JoinGroup answered at gen in a consumer
// group: the broker names the member itself leader and lists no one.
func follower(id string, gen int32) decode.JoinGroup {
	return jg(id, gen, id)
}

func migrationOf(t *testing.T, r *Report, group string) []MigrationReport {
	t.Helper()
	for _, g := range r.Groups {
		if g.Group == group {
			return g.Migrations
		}
	}
	t.Fatalf("no group %s", group)
	return nil
}

// upgradeScript: classic A and B (gen 1); C joins with the consumer
// protocol, which converts the group; A and B rejoin at epoch 2 as
// classic members, then leave one after the other: the upgrade completes
// when B, the last classic member, leaves.
func upgradeScript() *script {
	w := newMigrationWire("up")
	s := twoMembers("up")
	w.evs = append(w.evs, s.evs...)
	w.cghb(cC, 10, 10.01, "C", 0, 2, []int32{})
	w.hb(cA, 10.5, 10.501, "A-1", 1, errRebalanceInProgress)
	w.join(cA, 10.51, 10.52, follower("A-1", 2))
	w.sync(cA, 10.53, 10.54, "A-1", 2, tp("round_topic", 0), nil)
	w.hb(cB, 10.6, 10.601, "B-1", 1, errRebalanceInProgress)
	w.join(cB, 10.61, 10.62, follower("B-1", 2))
	w.sync(cB, 10.63, 10.64, "B-1", 2, tp("round_topic", 2), nil)
	w.cghb(cC, 11, 11.01, "C", 2, 2, []int32{1})
	w.leave(cA, 20, 20.01, "A-1", "rolled to group.protocol=consumer")
	w.cghb(cC, 21, 21.01, "C", 2, 3, []int32{0, 1})
	w.leave(cB, 30, 30.01, "B-1", "rolled to group.protocol=consumer")
	w.cghb(cC, 31, 31.01, "C", 3, 4, []int32{0, 1, 2})
	return w.script
}

// TestOnlineUpgrade: upgradeScript's migration, member by member.
func TestOnlineUpgrade(t *testing.T) {
	entries, r, _ := run(t, Config{}, upgradeScript().events(), 40)

	ms := migrationOf(t, r, "up")
	if len(ms) != 1 {
		t.Fatalf("migrations %+v; want one upgrade\n%s", ms, entryLines(entries))
	}
	m := ms[0]
	if m.Direction != MigrationUpgrade || m.StartedBy != "C" || m.ConvertedBy != "C" || m.ConvertedAt == nil || *m.ConvertedAt != stamp(sec(10)) ||
		m.Generation == nil || *m.Generation != 1 || m.CompletedAt == nil || *m.CompletedAt != stamp(sec(30)) || m.LastMember != "B-1" {
		t.Errorf("migration %+v; want upgrade by C at 14:02:10 from generation 1, completed when B-1 left at 14:02:30", m)
	}
	e2 := genOf(t, r, "up", 2)
	for id, want := range map[string]string{"A-1": ProtocolClassic, "B-1": ProtocolClassic, "C": ProtocolConsumer} {
		mr := memberOf(t, e2, id)
		if mr.Protocol != want || mr.Status == "unobserved" {
			t.Errorf("epoch 2 %s: protocol %q status %q; want %s, seen", id, mr.Protocol, mr.Status, want)
		}
	}
	if a := memberOf(t, e2, "A-1"); a.Assignment["round_topic"] == nil || a.Assignment["round_topic"][0] != 0 {
		t.Errorf("A-1 in epoch 2 assigned %v; want round_topic [0] from its SyncGroup", a.Assignment)
	}
	if e2.Status != "stable" || len(e2.Departed) != 0 {
		t.Errorf("epoch 2 %s departed %+v; want stable, none departed", e2.Status, e2.Departed)
	}
	e3 := genOf(t, r, "up", 3)
	if e3.Trigger.Kind != TriggerMemberLeft || e3.Trigger.Member != "A-1" || len(e3.Departed) != 1 || e3.Departed[0].How != DepartLeft {
		t.Errorf("epoch 3 trigger %+v departed %+v; want A-1 left", e3.Trigger, e3.Departed)
	}
	if findEntry(entries, KindMigration, "group converted from classic to consumer") == nil ||
		findEntry(entries, KindMigration, "online upgrade complete at epoch 3") == nil {
		t.Errorf("migration entries missing:\n%s", entryLines(entries))
	}
	if r.Groups[0].GroupProtocol != "consumer" {
		t.Errorf("group protocol %s; want consumer", r.Groups[0].GroupProtocol)
	}
	// The classic members' rejoins to reconcile are told, with what an
	// eager assignor's member stopped meanwhile.
	for _, want := range []string{
		"A-1 (client consumer-A 127.0.0.1:50001) rejoined with the classic protocol to reconcile (epoch 2), JoinGroup held 10 ms; its assignor range is eager: it stopped consuming round_topic[0 1] until its assignment",
		"B-1 (client consumer-B 127.0.0.1:50002) rejoined with the classic protocol to reconcile (epoch 2), JoinGroup held 10 ms; its assignor range is eager: it stopped consuming round_topic[2] until its assignment",
	} {
		if findEntry(entries, KindMemberJoined, want) == nil {
			t.Errorf("no entry %q:\n%s", want, entryLines(entries))
		}
	}
}

// TestOnlineDowngrade: consumer members M1 and M2; classic X joins at
// epoch 3 (a downgrade starts); M1 leaves (epoch 4 starts), then M2, the
// last consumer-protocol member, which converts the group to classic at
// epoch 4 before anyone reconciled with it; X then rebalances alone as a
// classic group (gen 5: the broker's classic group continues the epochs).
func TestOnlineDowngrade(t *testing.T) {
	w := newMigrationWire("down")
	w.cghb(cA, 1, 1.01, "M1", 0, 1, []int32{0, 1, 2})
	w.cghb(cB, 2, 2.01, "M2", 0, 2, []int32{})
	w.cghb(cA, 3, 3.01, "M1", 1, 2, []int32{0, 1})
	w.cghb(cB, 4, 4.01, "M2", 2, 2, []int32{2})
	w.memberIDRequired(cC, 10, 10.001, "X-1")
	w.join(cC, 10.01, 10.02, follower("X-1", 3))
	w.sync(cC, 10.03, 10.04, "X-1", 3, tp("round_topic"), nil)
	w.cghb(cA, 11, 11.01, "M1", 2, 3, []int32{0})
	w.cghb(cB, 11.2, 11.21, "M2", 2, 3, []int32{2})
	w.hb(cC, 11.5, 11.501, "X-1", 3, errRebalanceInProgress)
	w.join(cC, 11.51, 11.52, follower("X-1", 3))
	w.sync(cC, 11.53, 11.54, "X-1", 3, tp("round_topic", 1), nil)
	w.cghb(cA, 20, 20.01, "M1", -1, -1, nil)
	w.cghb(cB, 21, 21.01, "M2", -1, -1, nil)
	w.hb(cC, 22, 22.001, "X-1", 3, errRebalanceInProgress)
	w.join(cC, 22.01, 22.02, jg("X-1", 5, "X-1", "X-1"))
	all := tp("round_topic", 0, 1, 2)
	w.sync(cC, 22.03, 22.04, "X-1", 5, all, map[string][]decode.TopicPartitions{"X-1": all})
	w.hbs(cC, "X-1", 5, 25, 30)
	entries, r, _ := run(t, Config{}, w.events(), 31)

	ms := migrationOf(t, r, "down")
	if len(ms) != 1 {
		t.Fatalf("migrations %+v; want one downgrade\n%s", ms, entryLines(entries))
	}
	m := ms[0]
	if m.Direction != MigrationDowngrade || m.StartedBy != "X-1" || m.StartedAt != stamp(sec(10.01)) || m.ConvertedBy != "M2" ||
		m.ConvertedAt == nil || *m.ConvertedAt != stamp(sec(21)) || m.CompletedAt == nil || m.LastMember != "M2" ||
		m.Generation == nil || *m.Generation != 4 {
		t.Errorf("migration %+v; want downgrade started by X-1 at 14:02:10.010, converted at epoch 4 when M2 left at 14:02:21", m)
	}
	if x := memberOf(t, genOf(t, r, "down", 3), "X-1"); x.Protocol != ProtocolClassic || x.Status == "unobserved" {
		t.Errorf("epoch 3 X-1: protocol %q status %q; want classic, seen", x.Protocol, x.Status)
	}
	g5 := genOf(t, r, "down", 5)
	if g5.Mode == ModeConsumer || g5.Status != "stable" || g5.Leader != "X-1" || memberOf(t, g5, "X-1").Protocol != ProtocolClassic {
		t.Errorf("gen 5: mode %s status %s leader %s; want a stable classic generation led by X-1\n%s", g5.Mode, g5.Status, g5.Leader, entryLines(entries))
	}
	// Epoch 4 was seen started (M1 left), not missed.
	if len(g5.Unknown) != 0 || findEntry(entries, KindPartial, "not observed") != nil {
		t.Errorf("gen 5 unknown %+v; want none: epoch 4 started and the group converted\n%s", g5.Unknown, entryLines(entries))
	}
	g := r.Groups[0]
	if g.GroupProtocol != "classic" || len(g.ConsumerMembers) != 3 {
		t.Errorf("group protocol %s with %d consumer members; want classic, M1 M2 X-1 kept", g.GroupProtocol, len(g.ConsumerMembers))
	}
	if findEntry(entries, KindMigration, "online downgrade started") == nil ||
		findEntry(entries, KindMigration, "group converted from consumer to classic (online downgrade) at epoch 4: its last consumer-protocol member M2 is gone; the classic members (X-1) rebalance as a classic group (epoch 4, started by a member joining or leaving, was never reconciled)") == nil {
		t.Errorf("migration entries missing:\n%s", entryLines(entries))
	}
}

// TestClassicMemberTimesOut: after the upgrade, classic B-1 goes silent
// past its JoinGroup's session timeout (10 s) while A-1 and C heartbeat;
// the next epoch's trigger is B-1's session timeout.
func TestClassicMemberTimesOut(t *testing.T) {
	w := newMigrationWire("quiet")
	s := twoMembers("quiet")
	w.evs = append(w.evs, s.evs...)
	w.cghb(cC, 10, 10.01, "C", 0, 2, []int32{})
	w.hb(cA, 10.5, 10.501, "A-1", 1, errRebalanceInProgress)
	w.join(cA, 10.51, 10.52, follower("A-1", 2))
	w.sync(cA, 10.53, 10.54, "A-1", 2, tp("round_topic", 0), nil)
	w.hb(cB, 10.6, 10.601, "B-1", 1, errRebalanceInProgress)
	w.join(cB, 10.61, 10.62, follower("B-1", 2))
	w.sync(cB, 10.63, 10.64, "B-1", 2, tp("round_topic", 2), nil)
	w.cghb(cC, 11, 11.01, "C", 2, 2, []int32{1})
	for at := 13.0; at < 30; at += 3 {
		w.hb(cA, at, at+0.001, "A-1", 2, 0)
		w.cghb(cC, at+0.5, at+0.51, "C", 2, 2, nil)
	}
	w.cghb(cC, 30, 30.01, "C", 2, 3, []int32{1, 2})
	entries, r, _ := run(t, Config{}, w.events(), 35)
	e3 := genOf(t, r, "quiet", 3)
	if e3.Trigger.Kind != TriggerSessionTimeout || e3.Trigger.Member != "B-1" ||
		!strings.Contains(e3.Trigger.Reason, "no heartbeat since 14:02:10.630 UTC, session timeout 10 s") {
		t.Errorf("epoch 3 trigger %+v; want B-1's session timeout of 10 s\n%s", e3.Trigger, entryLines(entries))
	}
	if len(e3.Departed) != 1 || e3.Departed[0].MemberID != "B-1" || e3.Departed[0].How != DepartSessionTimeout {
		t.Errorf("epoch 3 departed %+v; want B-1 by session timeout", e3.Departed)
	}
	if a := memberOf(t, e3, "A-1"); a.Protocol != ProtocolClassic {
		t.Errorf("A-1 in epoch 3: %+v; want still a classic member", a)
	}
}
