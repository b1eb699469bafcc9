package timeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// shareScript: a share group on orders (2 partitions). S1 joins and acquires
// records, acknowledging some (accepted, released, rejected); S2 joins
// (epoch 2); S1 leaves holding orders[0] 10-19, which S2 acquires again
// once their locks expired (delivery 2), with the offset S1 released. S3
// joins; S2 acquires orders[1] 5-9 and goes quiet; its lock expires and S3
// gets them. One acknowledgement is refused.
func shareScript() *script {
	s := newScript("share")
	id := decode.TopicID{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6}
	md := s.ev(cA, 3, 0, 0.001)
	md.Group, md.Metadata = "", &decode.Metadata{Topics: []decode.MetadataTopic{{Name: "orders", TopicID: id, Partitions: 2}}}
	parts := func(ps ...int32) []decode.TopicIDPartitions {
		return []decode.TopicIDPartitions{{TopicID: id, Partitions: ps}}
	}
	hb := func(c client, req float64, member string, epoch, respEpoch int32, assignment []decode.TopicIDPartitions) {
		h := &decode.ShareGroupHeartbeat{MemberID: member, MemberEpoch: epoch, AssignedMemberID: member,
			AssignedEpoch: respEpoch, Assignment: assignment, HeartbeatInterval: 5 * time.Second}
		if epoch == 0 {
			h.SubscribedTopicNames = []string{"orders"}
		}
		s.ev(c, 76, req, req+0.002).ShareGroupHeartbeat = h
	}
	acq := func(p int32, first, last int64, dc int16) decode.ShareFetchPartition {
		return decode.ShareFetchPartition{TopicID: id, Partition: p, Acquired: []decode.AcquiredRange{{FirstOffset: first, LastOffset: last, DeliveryCount: dc}}}
	}
	ack := func(p int32, first, last int64, accepted, released, rejected int64) decode.ShareAck {
		return decode.ShareAck{TopicID: id, Partition: p, FirstOffset: first, LastOffset: last, Accepted: accepted, Released: released, Rejected: rejected}
	}
	fetch := func(c client, req float64, member string, acks []decode.ShareAck, got ...decode.ShareFetchPartition) {
		s.ev(c, 78, req, req+0.5).ShareFetch = &decode.ShareFetch{MemberID: member, Acknowledgements: acks,
			AcquisitionLockTimeout: 30 * time.Second, Partitions: got}
	}
	hb(cA, 1, "S1", 0, 1, parts(0, 1))
	fetch(cA, 2, "S1", nil, acq(0, 0, 9, 1), acq(1, 0, 4, 1))
	fetch(cA, 3, "S1", []decode.ShareAck{ack(0, 0, 9, 10, 0, 0), ack(1, 0, 4, 3, 1, 1)}, acq(0, 10, 19, 1))
	hb(cB, 5, "S2", 0, 2, parts(0, 1))
	hb(cA, 6, "S1", 1, 2, nil)
	hb(cA, 7, "S1", -1, -1, nil)
	hb(cB, 8, "S2", 2, 3, nil)
	fetch(cB, 38, "S2", nil, acq(0, 10, 19, 2), acq(1, 2, 2, 2))
	fetch(cB, 39, "S2", []decode.ShareAck{ack(0, 10, 19, 10, 0, 0), ack(1, 2, 2, 1, 0, 0)}, acq(1, 5, 9, 1))
	hb(cC, 41, "S3", 0, 4, parts(0, 1))
	hb(cB, 42, "S2", 3, 4, nil)
	fetch(cC, 75, "S3", nil, acq(1, 5, 9, 2))
	a := s.ev(cB, 79, 76, 76.002)
	a.ShareAcknowledge = &decode.ShareAcknowledge{MemberID: "S2", Acknowledgements: []decode.ShareAck{ack(1, 5, 9, 5, 0, 0)},
		Partitions: []decode.SharePartitionError{{TopicID: id, Partition: 1, ErrorCode: 121}}}
	return s
}

// TestShareRecords checks the share group's counts and redeliveries
// against the script's own arithmetic.
func TestShareRecords(t *testing.T) {
	_, r, _ := run(t, Config{}, shareScript().events(), 80)
	g := r.Groups[0]
	if g.GroupProtocol != "share" || g.Share == nil {
		t.Fatalf("group protocol %q, share %v; want a share group", g.GroupProtocol, g.Share)
	}
	want := ShareCountsReport{Acquired: 10 + 5 + 10 + 10 + 1 + 5 + 5, Redelivered: 10 + 1 + 5, Accepted: 10 + 3 + 10 + 1,
		Released: 1, Rejected: 1, AcknowledgeFailed: 5, Unacknowledged: 5} // S3 holds orders[1] 5-9
	if g.Share.Totals != want {
		t.Errorf("totals %+v; want %+v", g.Share.Totals, want)
	}
	if n := len(g.Share.Redeliveries); n != 2 {
		t.Fatalf("%d redeliveries; want 2: %+v", n, g.Share.Redeliveries)
	}
	left, expired := g.Share.Redeliveries[0], g.Share.Redeliveries[1]
	if left.From != "S1" || left.MemberID != "S2" || left.How != "left" || left.Offsets != "10-19" || left.Records != 10 || left.Partition != 0 {
		t.Errorf("first redelivery %+v; want S1's orders[0] 10-19 to S2 after S1 left", left)
	}
	if expired.From != "S2" || expired.MemberID != "S3" || expired.How != "lock_expired" || expired.Offsets != "5-9" || expired.DepartedAt != nil {
		t.Errorf("second redelivery %+v; want S2's orders[1] 5-9 to S3, lock expired", expired)
	}
	gen := g.Generations[len(g.Generations)-1]
	if gen.Mode != ModeShare || gen.Generation != 4 || len(gen.Members) != 2 {
		t.Errorf("last epoch %d mode %s with %d members; want epoch 4, share, S2 and S3", gen.Generation, gen.Mode, len(gen.Members))
	}
}

func TestRangeSets(t *testing.T) {
	var rs []offRange
	for _, r := range []offRange{{10, 19}, {30, 39}, {20, 25}, {0, 4}, {27, 28}} {
		rs = addRange(rs, r)
	}
	if got := rangesString(rs); got != "0-4 10-25 27-28 30-39" {
		t.Fatalf("added: %s", got)
	}
	rest, cut := cutRange(rs, offRange{3, 31})
	if got, want := rangesString(rest), "0-2 32-39"; got != want {
		t.Errorf("rest %s; want %s", got, want)
	}
	if got, want := rangesString(cut), "3-4 10-25 27-28 30-31"; got != want {
		t.Errorf("cut %s; want %s", got, want)
	}
}

// TestShareEpochsAreNoStorm: members coming and going make a share group's
// epoch climb as fast as a KIP-848 group's, but a share group never stops
// (its members share partitions and revoke nothing), so its epochs are not
// counted as rebalances by the storm detector; the same heartbeats as
// ConsumerGroupHeartbeats make a storm.
func TestShareEpochsAreNoStorm(t *testing.T) {
	id := decode.TopicID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	churn := func(share bool) *Report {
		s := newScript("churn")
		md := s.ev(cA, 3, 0, 0.001)
		md.Group, md.Metadata = "", &decode.Metadata{Topics: []decode.MetadataTopic{{Name: "orders", TopicID: id, Partitions: 2}}}
		epoch := int32(0)
		hb := func(c client, at float64, member string, memberEpoch int32) {
			resp := int32(-1)
			if memberEpoch >= 0 {
				epoch++
				resp = epoch
			}
			var topics []string
			var assignment []decode.TopicIDPartitions
			if memberEpoch == 0 {
				topics = []string{"orders"}
				assignment = []decode.TopicIDPartitions{{TopicID: id, Partitions: []int32{0, 1}}}
			}
			ev := s.ev(c, 76, at, at+0.002)
			if share {
				ev.ShareGroupHeartbeat = &decode.ShareGroupHeartbeat{MemberID: member, MemberEpoch: memberEpoch, AssignedMemberID: member,
					AssignedEpoch: resp, SubscribedTopicNames: topics, Assignment: assignment, HeartbeatInterval: 5 * time.Second}
				return
			}
			ev.APIKey = 68
			ev.ConsumerGroupHeartbeat = &decode.ConsumerGroupHeartbeat{MemberID: member, MemberEpoch: memberEpoch, AssignedMemberID: member,
				AssignedEpoch: resp, SubscribedTopicNames: topics, Assignment: assignment, HeartbeatInterval: 5 * time.Second}
		}
		hb(cA, 1, "A", 0)
		for i, c := range []client{cB, cC, cB, cC} {
			member := fmt.Sprintf("M%d", i)
			hb(c, float64(10+20*i), member, 0)
			hb(c, float64(20+20*i), member, -1)
		}
		_, r, _ := run(t, Config{}, s.events(), 100)
		return r
	}
	consumer, share := churn(false), churn(true)
	if g := consumer.Groups[0]; len(g.Storms) != 1 {
		t.Fatalf("KIP-848 group: %d storms over %d epochs; want 1 (the control)", len(g.Storms), len(g.Generations))
	}
	g := share.Groups[0]
	if g.GroupProtocol != "share" || len(g.Generations) < 5 {
		t.Fatalf("share group: protocol %q, %d epochs; want share and at least 5", g.GroupProtocol, len(g.Generations))
	}
	if len(g.Storms) != 0 {
		t.Errorf("share group: %d storms; want none", len(g.Storms))
	}
}
