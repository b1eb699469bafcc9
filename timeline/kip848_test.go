package timeline

import (
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// kip848Wire builds KIP-848 exchanges on topic orders (3 partitions).
type kip848Wire struct {
	s  *script
	id [16]byte
}

func newKIP848Wire(group string) *kip848Wire {
	w := &kip848Wire{s: newScript(group), id: [16]byte{9, 8, 7}}
	md := w.s.ev(cA, 3, 0, 0.001)
	md.Group, md.Metadata = "", &decode.Metadata{Topics: []decode.MetadataTopic{{Name: "orders", TopicID: w.id, Partitions: 3}}}
	return w
}

func (w *kip848Wire) parts(ps ...int32) []decode.TopicIDPartitions {
	return []decode.TopicIDPartitions{{TopicID: w.id, Partitions: ps}}
}

// hb is one ConsumerGroupHeartbeat of member at epoch, requested at req
// and answered at resp with respEpoch and assignment (nil: unchanged).
func (w *kip848Wire) hb(c client, req, resp float64, member string, epoch, respEpoch int32, assignment []decode.TopicIDPartitions, code int16) {
	h := &decode.ConsumerGroupHeartbeat{MemberID: member, MemberEpoch: epoch, AssignedMemberID: member,
		AssignedEpoch: respEpoch, Assignment: assignment, ErrorCode: code, HeartbeatInterval: 5 * time.Second}
	if epoch == 0 {
		h.SubscribedTopicNames = []string{"orders"}
	}
	w.s.ev(c, 68, req, resp).ConsumerGroupHeartbeat = h
}

// every sends member's heartbeats at epoch every 5 s from from to to.
func (w *kip848Wire) every(c client, member string, epoch int32, from, to float64) {
	for at := from; at <= to; at += 5 {
		w.hb(c, at, at+0.002, member, epoch, epoch, nil, 0)
	}
}

func consumerMemberOf(t *testing.T, r *Report, group, id string) ConsumerMemberReport {
	t.Helper()
	for _, g := range r.Groups {
		for _, cm := range g.ConsumerMembers {
			if g.Group == group && cm.MemberID == id {
				return cm
			}
		}
	}
	t.Fatalf("group %s has no consumer member %s", group, id)
	return ConsumerMemberReport{}
}

// TestKIP848AnswersOutOfOrder: joining members whose own answers complete
// after other members' answers at the epoch their join started, as
// franz-go's TestGroupETL shows through kproxy. Each is "joined" in that
// epoch (not "unobserved"), and a join answered with an epoch older than
// one already shown, but sent before it was shown, is no re-created group.
func TestKIP848AnswersOutOfOrder(t *testing.T) {
	w := newKIP848Wire("late")
	w.hb(cA, 1, 1.002, "M1", 0, 1, w.parts(0, 1, 2), 0)
	// M2 joins at 10.0 (epoch 2); M1's next heartbeat shows epoch 2 first.
	w.hb(cB, 10, 10.3, "M2", 0, 2, w.parts(), 0)
	w.hb(cA, 10.1, 10.2, "M1", 1, 2, nil, 0)
	// M3 joins at 11.0 (epoch 3) and M4 at 11.1 (epoch 4); M4's answer
	// and M1's at epoch 4 complete before M3's, which says epoch 3.
	w.hb(cC, 11, 11.6, "M3", 0, 3, w.parts(), 0)
	w.hb(client{"consumer-D", "127.0.0.1:50004"}, 11.1, 11.3, "M4", 0, 4, w.parts(), 0)
	w.hb(cA, 11.2, 11.4, "M1", 2, 4, nil, 0)
	w.hb(cB, 12, 12.002, "M2", 2, 4, nil, 0)
	w.hb(cC, 12.1, 12.102, "M3", 3, 4, nil, 0)
	entries, r, _ := run(t, Config{}, w.s.events(), 20)
	if len(r.Groups) != 1 {
		t.Fatalf("%d histories of the group; want 1 (no re-creation)\n%s", len(r.Groups), entryLines(entries))
	}
	for _, num := range []int32{2, 4} {
		gen := genOf(t, r, "late", num)
		for _, m := range gen.Members {
			if m.Status == "unobserved" {
				t.Errorf("epoch %d: %s unobserved; every member's heartbeats were seen", num, m.MemberID)
			}
		}
	}
	if m := memberOf(t, genOf(t, r, "late", 2), "M2"); m.Status != "joined" {
		t.Errorf("M2 in epoch 2: %s; want joined", m.Status)
	}
	if m3 := consumerMemberOf(t, r, "late", "M3"); len(m3.Epochs) != 2 || m3.Epochs[0].Epoch != 3 || m3.Epochs[1].Epoch != 4 {
		t.Errorf("M3's epochs %+v; want 3 then 4, each told once", m3.Epochs)
	}
	if e := findEntry(entries, KindRecreated, ""); e != nil {
		t.Errorf("re-created entry: %s", e.Text)
	}
}

// sessionTimeoutWire: M1 and M2 share orders at epoch 2; M2 goes silent
// after 12 s while M1 heartbeats; at 61 s M1's answer shows epoch 3 with
// all three partitions, no other cause in view.
func sessionTimeoutWire() *kip848Wire {
	w := newKIP848Wire("silent")
	w.hb(cA, 1, 1.002, "M1", 0, 1, w.parts(0, 1, 2), 0)
	w.hb(cB, 10, 10.002, "M2", 0, 2, w.parts(), 0)
	w.hb(cA, 11, 11.002, "M1", 1, 1, w.parts(0, 1), 0)
	w.hb(cA, 11.5, 11.502, "M1", 1, 2, nil, 0)
	w.hb(cB, 12, 12.002, "M2", 2, 2, w.parts(2), 0)
	w.every(cA, "M1", 2, 16, 56)
	w.hb(cA, 61, 61.002, "M1", 2, 3, w.parts(0, 1, 2), 0)
	return w
}

// TestKIP848SessionTimeout: the broker removed a member that went silent
// past its session timeout; the story infers it from the silence, and the
// member's return, fenced, starts nothing.
func TestKIP848SessionTimeout(t *testing.T) {
	w := sessionTimeoutWire()
	w.hb(cB, 70, 70.002, "M2", 2, 0, nil, errUnknownMemberID)
	entries, r, _ := run(t, Config{}, w.s.events(), 75)
	e3 := genOf(t, r, "silent", 3)
	if e3.Trigger.Kind != TriggerSessionTimeout || e3.Trigger.Member != "M2" {
		t.Fatalf("epoch 3 trigger %+v; want session_timeout of M2\n%s", e3.Trigger, entryLines(entries))
	}
	for _, want := range []string{"no heartbeat since 14:02:12.000 UTC", "heartbeat interval 5 s", "between 44.00 s and 49.00 s"} {
		if !strings.Contains(e3.Trigger.Reason, want) {
			t.Errorf("trigger reason %q; want it to contain %q", e3.Trigger.Reason, want)
		}
	}
	if len(e3.Departed) != 1 || e3.Departed[0].MemberID != "M2" || e3.Departed[0].How != DepartSessionTimeout {
		t.Errorf("epoch 3 departed %+v; want M2 by session_timeout", e3.Departed)
	}
	if e3.Status != "stable" || len(e3.Members) != 1 {
		t.Errorf("epoch 3 %s with %d members; want stable with M1 alone", e3.Status, len(e3.Members))
	}
	if findEntry(entries, KindSessionExpired, "session of M2 timed out") == nil {
		t.Errorf("no session_expired entry for M2")
	}
	if findEntry(entries, KindRebalanceStarted, "cause not observed") != nil {
		t.Errorf("an epoch started with its cause not observed:\n%s", entryLines(entries))
	}
	if e := findEntry(entries, KindFenced, "its session had timed out"); e == nil {
		t.Errorf("M2's return is not told as fenced after its session timed out:\n%s", entryLines(entries))
	}
	if n := kinds(entries)[KindRebalanceStarted]; n != 3 {
		t.Errorf("%d epochs started; want 3 (M2's fence after its timeout starts none)\n%s", n, entryLines(entries))
	}
}

// TestKIP848SilentButAlive: a member silent when a new epoch shows, but
// heard from again at its epoch: its inferred timeout is withdrawn.
func TestKIP848SilentButAlive(t *testing.T) {
	w := sessionTimeoutWire()
	w.hb(cB, 62, 62.002, "M2", 2, 3, w.parts(), 0)
	entries, r, _ := run(t, Config{}, w.s.events(), 75)
	e3 := genOf(t, r, "silent", 3)
	if e3.Trigger.Kind != TriggerUnknown || len(e3.Departed) != 0 {
		t.Errorf("epoch 3 trigger %+v departed %+v; want unknown, none", e3.Trigger, e3.Departed)
	}
	if m := memberOf(t, e3, "M2"); m.Status != "member" {
		t.Errorf("M2 in epoch 3: %s; want member", m.Status)
	}
	if findEntry(entries, KindPartial, "M2 was heard from again") == nil {
		t.Errorf("no withdrawal entry:\n%s", entryLines(entries))
	}
}

// TestKIP848SilentWithAnotherCause: a silent member when the new epoch has
// a cause in view (a join) is not inferred to have timed out.
func TestKIP848SilentWithAnotherCause(t *testing.T) {
	t.Run("in view", func(t *testing.T) {
		w := sessionTimeoutWire()
		w.hb(cC, 59, 59.5, "M3", 0, 3, w.parts(), 0)
		_, r, _ := run(t, Config{}, w.s.events(), 62)
		e3 := genOf(t, r, "silent", 3)
		if e3.Trigger.Kind != TriggerMemberJoined || e3.Trigger.Member != "M3" || len(e3.Departed) != 0 {
			t.Errorf("epoch 3 trigger %+v departed %+v; want M3's join, none", e3.Trigger, e3.Departed)
		}
	})
}

// TestKIP848LateLeave: a member's leave whose answer completes after
// another member's answer at the epoch it started is that epoch's trigger.
func TestKIP848LateLeave(t *testing.T) {
	w := newKIP848Wire("leave")
	w.hb(cA, 1, 1.002, "M1", 0, 1, w.parts(0, 1, 2), 0)
	w.hb(cB, 10, 10.002, "M2", 0, 2, w.parts(), 0)
	w.hb(cA, 11, 11.002, "M1", 1, 1, w.parts(0, 1), 0)
	w.hb(cA, 11.5, 11.502, "M1", 1, 2, nil, 0)
	w.hb(cB, 12, 12.002, "M2", 2, 2, w.parts(2), 0)
	w.hb(cB, 20, 20.5, "M2", -1, -1, nil, 0)
	w.hb(cA, 20.1, 20.2, "M1", 2, 3, w.parts(0, 1, 2), 0)
	entries, r, _ := run(t, Config{}, w.s.events(), 25)
	if tr := genOf(t, r, "leave", 3).Trigger; tr.Kind != TriggerMemberLeft || tr.Member != "M2" {
		t.Errorf("epoch 3 trigger %+v; want M2's leave\n%s", tr, entryLines(entries))
	}
	if findEntry(entries, KindTrigger, "group epoch 3 trigger: member left M2") == nil {
		t.Errorf("the trigger found late is not told:\n%s", entryLines(entries))
	}
}

// TestKIP848RevocationFirstSign: the broker revokes partitions at a
// member's epoch, before any answer shows the new epoch: the rebalance is
// told started, its first sign the revocation (there is no
// REBALANCE_IN_PROGRESS in KIP-848).
func TestKIP848RevocationFirstSign(t *testing.T) {
	w := newKIP848Wire("sign")
	w.hb(cA, 1, 1.002, "M1", 0, 1, w.parts(0, 1, 2), 0)
	w.hb(cA, 6, 6.002, "M1", 1, 1, w.parts(0, 1), 0)
	entries, _, _ := run(t, Config{}, w.s.events(), 7)
	e := findEntry(entries, KindRebalanceStarted, "group epoch 1→2 started")
	if e == nil || !strings.Contains(e.Text, "first sign: partitions revoked without a new epoch") {
		t.Errorf("rebalance start %v; want its first sign the revocation\n%s", e, entryLines(entries))
	}
}
