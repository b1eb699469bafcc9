package diagnose

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// KIP-848 groups (ConsumerGroupHeartbeat): crafted streams of two or
// three members on topic orders, each checked against the exact kinds it
// must produce and, when it produces any, a JSON golden under testdata/.

// wire848 builds KIP-848 exchanges on topic orders, n partitions, named
// by a Metadata answer at 0.
type wire848 struct {
	s  *script
	id [16]byte
}

func newWire848(n int32) *wire848 {
	w := &wire848{s: newScript("g"), id: [16]byte{4, 8, 4, 8}}
	md := w.s.ev(cA, 3, 0, 0.001)
	md.Group, md.Metadata = "", &decode.Metadata{Topics: []decode.MetadataTopic{{Name: "orders", TopicID: w.id, Partitions: n}}}
	return w
}

func (w *wire848) parts(ps ...int32) []decode.TopicIDPartitions {
	return []decode.TopicIDPartitions{{TopicID: w.id, Partitions: ps}}
}

// hb is one ConsumerGroupHeartbeat of member at epoch, requested at req
// and answered 10 ms later with respEpoch and assignment (nil:
// unchanged). A join (epoch 0) subscribes to orders with a rebalance
// timeout of 30 s, as the Java client sends max.poll.interval.ms.
func (w *wire848) hb(c client, req float64, member string, epoch, respEpoch int32, assignment []decode.TopicIDPartitions, code int16) *decode.ConsumerGroupHeartbeat {
	h := &decode.ConsumerGroupHeartbeat{MemberID: member, MemberEpoch: epoch, AssignedMemberID: member,
		AssignedEpoch: respEpoch, Assignment: assignment, ErrorCode: code, HeartbeatInterval: 5 * time.Second}
	if epoch == 0 {
		h.SubscribedTopicNames, h.RebalanceTimeout = []string{"orders"}, 30*time.Second
	}
	if code != 0 {
		h.AssignedMemberID, h.AssignedEpoch = "", 0
	}
	w.s.ev(c, 68, req, req+0.01).ConsumerGroupHeartbeat = h
	return h
}

// every sends member's heartbeats at epoch every 5 s from from to to.
func (w *wire848) every(c client, member string, epoch int32, from, to float64) {
	for at := from; at <= to; at += 5 {
		w.hb(c, at, member, epoch, epoch, nil, 0)
	}
}

// fetches sends a Fetch of orders from c every second from from to to.
func (w *wire848) fetches(c client, from, to float64, ps ...int32) {
	for at := from; at <= to; at++ {
		offsets := map[int32]int64{}
		for _, p := range ps {
			offsets[p] = int64(at)
		}
		w.s.fetch(c, at, "orders", offsets)
	}
}

var (
	fetchA = client{"consumer-g-1", "10.0.0.1:4101"}
	fetchB = client{"consumer-g-2", "10.0.0.2:4102"}
)

// twoMembers is A (0, 1) and B (2) at epoch 2, B joining at 2.
func twoMembers(w *wire848) {
	w.hb(cA, 1, "A", 0, 1, w.parts(0, 1, 2), 0)
	w.hb(cB, 2, "B", 0, 2, w.parts(), 0)
	w.hb(cA, 3, "A", 1, 2, w.parts(0, 1), 0)
	w.hb(cB, 4, "B", 2, 2, w.parts(2), 0)
}

// pollTimeout848: B's fetches stop at 10; its heartbeat thread sends a
// leave heartbeat at 41 (31 s later, its rebalance timeout 30 s) and it
// joins again under its member id from rejoinFrom at 50.
func pollTimeout848(rejoinFrom client, id string) *script {
	w := newWire848(3)
	twoMembers(w)
	w.fetches(fetchA, 5, 75, 0, 1)
	w.fetches(fetchB, 5, 10, 2)
	w.every(cA, "A", 2, 8, 38)
	w.every(cB, "B", 2, 9, 39)
	w.hb(cB, 41, "B", -1, -1, nil, 0)
	w.hb(cA, 42, "A", 2, 3, w.parts(0, 1, 2), 0)
	w.hb(rejoinFrom, 50, id, 0, 4, w.parts(), 0)
	w.hb(cA, 51, "A", 3, 4, w.parts(0, 1), 0)
	w.hb(rejoinFrom, 52, id, 4, 4, w.parts(2), 0)
	w.every(cA, "A", 4, 56, 75)
	w.every(rejoinFrom, id, 4, 57, 75)
	w.fetches(client{rejoinFrom.id, "10.0.0.2:4202"}, 53, 75, 2)
	return w.s
}

// sessionTimeout848: B stops at 20 (no leave); the coordinator removes
// it after its session and A's heartbeat at 68 shows epoch 3 with B's
// partition.
func sessionTimeout848() *script {
	w := newWire848(3)
	twoMembers(w)
	w.every(cA, "A", 2, 8, 63)
	w.every(cB, "B", 2, 10, 20)
	w.hb(cA, 68, "A", 2, 3, w.parts(0, 1, 2), 0)
	w.every(cA, "A", 3, 73, 90)
	return w.s
}

// fencingLoop848: B is fenced (FENCED_MEMBER_EPOCH) at 20, 40 and 60,
// rejoining each time.
func fencingLoop848() *script {
	w := newWire848(3)
	twoMembers(w)
	epoch := int32(2)
	w.every(cA, "A", 2, 8, 18)
	w.every(cB, "B", 2, 9, 19)
	for _, at := range []float64{20, 40, 60} {
		w.hb(cB, at, "B", epoch, 0, nil, 110)
		w.hb(cA, at+0.5, "A", epoch, epoch+1, w.parts(0, 1, 2), 0)
		w.hb(cB, at+1, "B", 0, epoch+2, w.parts(), 0)
		w.hb(cA, at+2, "A", epoch+1, epoch+2, w.parts(0, 1), 0)
		w.hb(cB, at+3, "B", epoch+2, epoch+2, w.parts(2), 0)
		epoch += 2
		w.every(cA, "A", epoch, at+7, at+17)
		w.every(cB, "B", epoch, at+8, at+18)
	}
	w.every(cA, "A", epoch, 80, 90)
	w.every(cB, "B", epoch, 81, 90)
	return w.s
}

// slowRevocation848: C joins at 10 and A, told at 12 to give up
// partition 2, stays at epoch 1 until 50.
func slowRevocation848() *script {
	w := newWire848(3)
	w.hb(cA, 1, "A", 0, 1, w.parts(0, 1, 2), 0)
	w.every(cA, "A", 1, 6, 6)
	w.hb(cC, 10, "C", 0, 2, w.parts(), 0)
	w.hb(cA, 12, "A", 1, 1, w.parts(0, 1), 0)
	w.every(cA, "A", 1, 17, 47)
	w.every(cC, "C", 2, 15, 50)
	w.hb(cA, 50, "A", 1, 2, nil, 0)
	w.hb(cC, 51, "C", 2, 2, w.parts(2), 0)
	w.every(cA, "A", 2, 55, 90)
	w.every(cC, "C", 2, 56, 90)
	return w.s
}

// unassigned848: A (0) and B (1) at epoch 2 of a 3-partition topic:
// partition 2 is nobody's for a minute.
func unassigned848() *script {
	w := newWire848(3)
	w.hb(cA, 1, "A", 0, 1, w.parts(0), 0)
	w.hb(cB, 2, "B", 0, 2, w.parts(1), 0)
	w.hb(cA, 3, "A", 1, 2, nil, 0)
	w.every(cA, "A", 2, 8, 70)
	w.every(cB, "B", 2, 7, 70)
	return w.s
}

// joins848: six members join one after another, a second apart, each
// bumping the group epoch and taking partitions from the others: growth,
// at no cost but the revocations of moving partitions to newcomers.
func joins848() *script {
	w := newWire848(6)
	cs := []client{cA, cB, cC, {"consumer-g-4", "10.0.0.4:4004"}, {"consumer-g-5", "10.0.0.5:4005"}, {"consumer-g-6", "10.0.0.6:4006"}}
	ids := []string{"A", "B", "C", "D", "E", "F"}
	share := func(n, i int) []decode.TopicIDPartitions {
		var ps []int32
		for p := i; p < 6; p += n {
			ps = append(ps, int32(p))
		}
		return w.parts(ps...)
	}
	for n := 1; n <= 6; n++ {
		at := float64(n)
		w.hb(cs[n-1], at, ids[n-1], 0, int32(n), share(n, n-1), 0)
		for i := 0; i < n-1; i++ {
			w.hb(cs[i], at+0.3, ids[i], int32(n-1), int32(n), share(n, i), 0)
		}
	}
	for i := range cs {
		w.every(cs[i], ids[i], 6, 10+float64(i)/10, 60)
	}
	return w.s
}

// unseenBumps848: two steady members while the coordinator bumps the
// group epoch four times in 20 s for reasons kproxy does not see (a
// topic matching a regex, a batched assignment), moving nothing.
func unseenBumps848() *script {
	w := newWire848(3)
	twoMembers(w)
	epoch := int32(2)
	for at := 8.0; at < 60; at += 5 {
		if at >= 18 && at < 38 {
			epoch++
			w.hb(cA, at, "A", epoch-1, epoch, nil, 0)
			w.hb(cB, at+1, "B", epoch-1, epoch, nil, 0)
			continue
		}
		w.every(cA, "A", epoch, at, at)
		w.every(cB, "B", epoch, at+1, at+1)
	}
	return w.s
}

// staticRestart848: static member B (instance b) leaves with epoch -2
// for a restart and is back as B-2 3 s later, within its session: the
// coordinator hands it B's partition at the same epoch.
func staticRestart848() *script {
	w := newWire848(3)
	instance := "b"
	w.hb(cA, 1, "A", 0, 1, w.parts(0, 1, 2), 0)
	w.hb(cB, 2, "B", 0, 2, w.parts(), 0).InstanceID = &instance
	w.hb(cA, 3, "A", 1, 2, w.parts(0, 1), 0)
	w.hb(cB, 4, "B", 2, 2, w.parts(2), 0)
	w.every(cA, "A", 2, 8, 70)
	w.every(cB, "B", 2, 9, 29)
	w.hb(cB, 30, "B", -2, -2, nil, 0).InstanceID = &instance
	restarted := client{"consumer-g-2", "10.0.0.2:4012"}
	w.hb(restarted, 33, "B-2", 0, 2, w.parts(2), 0).InstanceID = &instance
	w.every(restarted, "B-2", 2, 38, 70)
	return w.s
}

// staticLate848: static member B (instance b) leaves with epoch -2 for a
// restart at 30 and is not back within its session: the coordinator
// removes it, and A's heartbeat at 78 shows epoch 3 with B's partition;
// B is back as B-2 at 90, and gets its partition back at epoch 4.
func staticLate848() *script {
	w := newWire848(3)
	instance := "b"
	w.hb(cA, 1, "A", 0, 1, w.parts(0, 1, 2), 0)
	w.hb(cB, 2, "B", 0, 2, w.parts(), 0).InstanceID = &instance
	w.hb(cA, 3, "A", 1, 2, w.parts(0, 1), 0)
	w.hb(cB, 4, "B", 2, 2, w.parts(2), 0)
	w.every(cA, "A", 2, 8, 73)
	w.every(cB, "B", 2, 9, 29)
	w.hb(cB, 30, "B", -2, -2, nil, 0).InstanceID = &instance
	w.hb(cA, 78, "A", 2, 3, w.parts(0, 1, 2), 0)
	restarted := client{"consumer-g-2", "10.0.0.2:4012"}
	w.hb(restarted, 90, "B-2", 0, 4, w.parts(), 0).InstanceID = &instance
	w.hb(cA, 91, "A", 3, 4, w.parts(0, 1), 0)
	w.hb(restarted, 92, "B-2", 4, 4, w.parts(2), 0)
	w.every(cA, "A", 4, 96, 120)
	w.every(restarted, "B-2", 4, 97, 120)
	return w.s
}

func TestKIP848Findings(t *testing.T) {
	cases := []struct {
		name    string
		script  *script
		closeAt float64
		want    []Kind
		storm   bool // the timeline saw a storm: the loop rule was asked
	}{
		// B's partition goes to A and back to B: a flap, as in a
		// classic group.
		{"kip848_poll_timeout", pollTimeout848(cB, "B"), 75, []Kind{PollTimeoutEviction, PartitionFlap}, true},
		// A new connection and a new member id: a restart, not a poll
		// timeout.
		{"kip848_leave_restart", pollTimeout848(client{"consumer-g-2", "10.0.0.2:4012"}, "B-2"), 75, nil, true},
		{"kip848_session_timeout", sessionTimeout848(), 90, []Kind{SessionTimeoutEviction}, false},
		{"kip848_fencing_loop", fencingLoop848(), 90, []Kind{RebalanceLoop, FencingLoop, PartitionFlap}, true},
		{"kip848_slow_revocation", slowRevocation848(), 90, []Kind{ReconciliationStuck}, false},
		{"kip848_unassigned", unassigned848(), 70, []Kind{PartitionUnowned}, false},
		{"kip848_joins", joins848(), 60, nil, true},
		{"kip848_unseen_bumps", unseenBumps848(), 60, nil, true},
		{"kip848_static_restart", staticRestart848(), 70, nil, false},
		// B's partition waited for it for its session, then moved to A.
		// Epochs 2, 3, 4 are a storm, with one departure: no loop.
		{"kip848_static_late", staticLate848(), 120, []Kind{SessionTimeoutEviction}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{}
			cfg.OnFinding = func(Finding) {}
			d := New(cfg, timeline.Config{})
			for _, it := range c.script.ordered() {
				feed(d, it)
			}
			d.Timeline().Close(sec(c.closeAt))
			d.Advance(sec(c.closeAt))
			fs := d.Findings()
			var got []Kind
			for _, f := range fs {
				got = append(got, f.Kind)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got kinds %v; want %v", got, c.want)
				for _, f := range fs {
					t.Logf("%s: %s %v", f.Kind, f.Explanation, f.Evidence)
				}
			}
			storms := 0
			for _, v := range d.Timeline().Views(nil) {
				storms += len(v.Storms)
			}
			if (storms > 0) != c.storm {
				t.Errorf("%d storms in the timeline; want storm %v", storms, c.storm)
			}
			if len(fs) > 0 {
				var b bytes.Buffer
				if err := WriteJSON(&b, fs); err != nil {
					t.Fatal(err)
				}
				golden(t, c.name+".json", b.Bytes())
			}
		})
	}
}
