package pipeline_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/timeline"
)

// shareMember speaks KIP-932 through kproxy with raw requests, so that the
// test decides exactly what is acquired, acknowledged and when it leaves.
type shareMember struct {
	t       *testing.T
	cl      *kgo.Client
	group   string
	id      string
	epoch   int32
	session int32 // the share session epoch of the next ShareFetch
	parts   []int32
}

func (m *shareMember) heartbeat(epoch int32) {
	m.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{topic}
	}
	resp, err := req.RequestWith(context.Background(), m.cl)
	if err != nil || resp.ErrorCode != 0 {
		m.t.Fatalf("%s: ShareGroupHeartbeat epoch %d: %v %v", m.id, epoch, err, kerr.ErrorForCode(resp.ErrorCode))
	}
	m.epoch = resp.MemberEpoch
	if a := resp.Assignment; a != nil {
		m.parts = nil
		for _, tp := range a.TopicPartitions {
			m.parts = append(m.parts, tp.Partitions...)
		}
		slices.Sort(m.parts)
	}
}

// fetch acknowledges acks (offsets to accept, by partition) and returns
// what it acquired: by partition, offset to delivery count.
func (m *shareMember) fetch(id [16]byte, acks map[int32][]int64) map[int32]map[int64]int16 {
	m.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &m.group, &m.id, m.session
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 200, 1, 1<<20, 500, 500
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = id
	for _, p := range []int32{0, 1, 2} {
		tp := kmsg.NewShareFetchRequestTopicPartition()
		tp.Partition = p
		for _, o := range acks[p] {
			b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = o, o, []int8{1}
			tp.AcknowledgementBatches = append(tp.AcknowledgementBatches, b)
		}
		t.Partitions = append(t.Partitions, tp)
	}
	if m.session == 0 || len(acks) > 0 {
		req.Topics = []kmsg.ShareFetchRequestTopic{t}
	}
	resp, err := req.RequestWith(context.Background(), m.cl)
	if err != nil || resp.ErrorCode != 0 {
		m.t.Fatalf("%s: ShareFetch: %v %v", m.id, err, kerr.ErrorForCode(resp.ErrorCode))
	}
	m.session++
	got := map[int32]map[int64]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			for _, a := range rp.AcquiredRecords {
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					if got[rp.Partition] == nil {
						got[rp.Partition] = map[int64]int16{}
					}
					got[rp.Partition][o] = a.DeliveryCount
				}
			}
		}
	}
	return got
}

func countOffsets(m map[int32]map[int64]int16) (n int64) {
	for _, p := range m {
		n += int64(len(p))
	}
	return n
}

// TestScenarioShareMemberLeavesHolding: A joins a share group and acquires
// records without acknowledging them; B joins; A leaves holding them; B
// gets them again (delivery 2) and accepts them. The timeline tells the
// membership by epoch, the records A abandoned, their redelivery to B,
// and counts that match what the members were answered; replaying the
// events tells the same.
func TestScenarioShareMemberLeavesHolding(t *testing.T) {
	e := startEnv(t)
	const group = "share"
	e.cluster.SetGroupConfigs(group, map[string]string{"share.auto.offset.reset": "earliest"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seed), kgo.ClientID("share-client"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = []kmsg.MetadataRequestTopic{mt}
	mdResp, err := md.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	id := mdResp.Topics[0].TopicID

	a := &shareMember{t: t, cl: cl, group: group, id: "share-member-a"}
	b := &shareMember{t: t, cl: cl, group: group, id: "share-member-b"}
	a.heartbeat(0)
	var heldByA map[int32]map[int64]int16
	for deadline := time.Now().Add(10 * time.Second); countOffsets(heldByA) < 30 && time.Now().Before(deadline); {
		for p, os := range a.fetch(id, nil) {
			if heldByA == nil {
				heldByA = map[int32]map[int64]int16{}
			}
			if heldByA[p] == nil {
				heldByA[p] = map[int64]int16{}
			}
			for o, dc := range os {
				heldByA[p][o] = dc
			}
		}
	}
	if countOffsets(heldByA) != 30 {
		t.Fatalf("A acquired %d records; want the 30 produced", countOffsets(heldByA))
	}
	b.heartbeat(0)
	a.heartbeat(a.epoch)
	a.heartbeat(-1) // leaves holding all 30
	for deadline := time.Now().Add(10 * time.Second); len(b.parts) < 3 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		b.heartbeat(b.epoch)
	}
	var gotByB int64
	redelivered := int64(0)
	acks := map[int32][]int64{}
	for deadline := time.Now().Add(10 * time.Second); gotByB < 30 && time.Now().Before(deadline); {
		got := b.fetch(id, acks)
		acks = map[int32][]int64{}
		for p, os := range got {
			for o, dc := range os {
				gotByB++
				if dc > 1 {
					redelivered++
				}
				acks[p] = append(acks[p], o)
			}
		}
	}
	b.fetch(id, acks) // accepts the last ones
	if gotByB != 30 || redelivered != 30 {
		t.Fatalf("B got %d records, %d of them delivered before; want 30 and 30", gotByB, redelivered)
	}

	var g timeline.GroupReport
	waitFor(t, e.tl, group, 5*time.Second, "B's acknowledgements", func() bool {
		g = e.tl.group(group)
		return g.Share != nil && g.Share.Totals.Accepted == 30
	})
	if g.GroupProtocol != "share" {
		t.Errorf("group protocol %q; want share", g.GroupProtocol)
	}
	last := g.Generations[len(g.Generations)-1]
	if last.Mode != timeline.ModeShare || len(last.Members) != 1 || last.Members[0].MemberID != b.id || last.Generation != b.epoch {
		t.Errorf("last epoch %d (%s) members %+v; want B alone at its epoch %d", last.Generation, last.Mode, last.Members, b.epoch)
	}
	if len(last.Departed) != 1 || last.Departed[0].MemberID != a.id || last.Departed[0].How != timeline.DepartLeft {
		t.Errorf("departed %+v; want A, left", last.Departed)
	}
	want := timeline.ShareCountsReport{Acquired: 60, Redelivered: 30, Accepted: 30}
	if g.Share.Totals != want {
		t.Errorf("totals %+v; want %+v", g.Share.Totals, want)
	}
	var moved int64
	for _, rd := range g.Share.Redeliveries {
		if rd.From != a.id || rd.MemberID != b.id || rd.How != "left" || rd.DeliveryCount != 2 {
			t.Errorf("redelivery %+v; want A's records to B after A left, delivery 2", rd)
		}
		moved += rd.Records
	}
	if moved != 30 {
		t.Errorf("redeliveries tell %d records; want 30", moved)
	}

	// Replay: the same events through a new engine tell the same story.
	e.tl.mu.Lock()
	events := slices.Clone(e.tl.events)
	live := e.tl.e.Report()
	e.tl.mu.Unlock()
	replay := timeline.New(timeline.Config{})
	for _, ev := range events {
		replay.Add(ev)
	}
	var lj, rj bytes.Buffer
	timeline.WriteJSON(&lj, live)
	timeline.WriteJSON(&rj, replay.Report())
	if lj.String() != rj.String() {
		t.Errorf("replayed report differs from the live one")
	}
	if testing.Verbose() || t.Failed() {
		t.Logf("timeline:\n%s", e.tl.log(group))
	}
}
