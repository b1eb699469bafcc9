package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/timeline"
)

// eosTopic is the input topic of the exactly-once member.
const eosTopic = "eos_in"

// eosMember is one member of a classic group driven request by request
// through kproxy, so that each step happens at a known point of the
// rebalance: a consume-transform-produce application's consumer and its
// transactional producer.
type eosMember struct {
	t      *testing.T
	cl     *kgo.Client
	group  string
	id     string
	gen    int32
	txnID  string
	pid    int64
	pepoch int16
	// topicID is eosTopic's id: TxnOffsetCommit v6 names topics by id.
	topicID [16]byte
}

func newEOSMember(t *testing.T, addr, group, clientID string) *eosMember {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &eosMember{t: t, cl: cl, group: group}
}

// request sends req and fails the test on a transport error.
func (m *eosMember) request(ctx context.Context, req kmsg.Request) kmsg.Response {
	m.t.Helper()
	resp, err := m.cl.Request(ctx, req)
	if err != nil {
		m.t.Fatalf("%T: %v", req, err)
	}
	return resp
}

// join joins (or rejoins) the group with the range assignor, retrying
// once with the member id MEMBER_ID_REQUIRED gives, and returns the
// response.
func (m *eosMember) join(ctx context.Context) *kmsg.JoinGroupResponse {
	m.t.Helper()
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = m.group, m.id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		sub := kmsg.ConsumerMemberMetadata{Topics: []string{eosTopic}}
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: sub.AppendTo(nil)}}
		resp := m.request(ctx, req).(*kmsg.JoinGroupResponse)
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			m.id = resp.MemberID
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			m.t.Fatalf("JoinGroup: %v", err)
		}
		m.id, m.gen = resp.MemberID, resp.Generation
		return resp
	}
}

// sync sends SyncGroup with plan (member id → partitions of eosTopic;
// nil for a follower).
func (m *eosMember) sync(ctx context.Context, plan map[string][]int32) {
	m.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for id, ps := range plan {
		a := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: eosTopic, Partitions: ps}}}
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a.AppendTo(nil)})
	}
	if resp := m.request(ctx, req).(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 {
		m.t.Fatalf("SyncGroup: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// heartbeat sends one Heartbeat and returns its error code.
func (m *eosMember) heartbeat(ctx context.Context) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	return m.request(ctx, req).(*kmsg.HeartbeatResponse).ErrorCode
}

// metadata learns eosTopic's id, as a client does before committing.
func (m *eosMember) metadata(ctx context.Context) {
	m.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(eosTopic)}}
	for _, t := range m.request(ctx, req).(*kmsg.MetadataResponse).Topics {
		if t.Topic != nil && *t.Topic == eosTopic {
			m.topicID = t.TopicID
		}
	}
}

// initProducer gets a producer id and epoch for transactional id txnID.
func (m *eosMember) initProducer(ctx context.Context, txnID string) {
	m.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(txnID), 60000
	resp := m.request(ctx, req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 {
		m.t.Fatalf("InitProducerID: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	m.txnID, m.pid, m.pepoch = txnID, resp.ProducerID, resp.ProducerEpoch
}

// commitInTxn adds offsets of eosTopic to the producer's transaction for
// the member's generation (AddOffsetsToTxn, then TxnOffsetCommit) and
// ends it, committing or aborting. It returns the producer epoch the
// transaction used.
func (m *eosMember) commitInTxn(ctx context.Context, offsets map[int32]int64, commit bool) int16 {
	m.t.Helper()
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = m.txnID, m.pid, m.pepoch, m.group
	if resp := m.request(ctx, add).(*kmsg.AddOffsetsToTxnResponse); resp.ErrorCode != 0 {
		m.t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = m.txnID, m.group, m.pid, m.pepoch
	req.MemberID, req.Generation = m.id, m.gen
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic, tt.TopicID = eosTopic, m.topicID
	for p, o := range offsets {
		tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		tp.Partition, tp.Offset = p, o
		tt.Partitions = append(tt.Partitions, tp)
	}
	req.Topics = append(req.Topics, tt)
	resp := m.request(ctx, req).(*kmsg.TxnOffsetCommitResponse)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				m.t.Fatalf("TxnOffsetCommit %s[%d]: %v", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	used := m.pepoch
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = m.txnID, m.pid, m.pepoch, commit
	endResp := m.request(ctx, end).(*kmsg.EndTxnResponse)
	if endResp.ErrorCode != 0 {
		m.t.Fatalf("EndTxn: %v", kerr.ErrorForCode(endResp.ErrorCode))
	}
	if endResp.Version >= 5 && endResp.ProducerID >= 0 { // KIP-890: the next transaction's epoch
		m.pid, m.pepoch = endResp.ProducerID, endResp.ProducerEpoch
	}
	return used
}

// committed is the group's committed offsets of eosTopic, as the broker
// answers OffsetFetch.
func (m *eosMember) committed(ctx context.Context) map[int32]int64 {
	m.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = m.group
	req.RequireStable = true
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: eosTopic, Partitions: []int32{0, 1, 2}}}
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: m.group, MemberEpoch: -1, Topics: []kmsg.OffsetFetchRequestGroupTopic{
		{Topic: eosTopic, TopicID: m.topicID, Partitions: []int32{0, 1, 2}}}}}
	resp := m.request(ctx, req).(*kmsg.OffsetFetchResponse)
	out := map[int32]int64{}
	add := func(p int32, offset int64, code int16) {
		if code == 0 && offset >= 0 {
			out[p] = offset
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			add(p.Partition, p.Offset, p.ErrorCode)
		}
	}
	for _, g := range resp.Groups {
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				add(p.Partition, p.Offset, p.ErrorCode)
			}
		}
	}
	return out
}

// TestEOSCommitDuringRevocation runs an exactly-once member A through a
// journaling kproxy in front of kfake: a transaction before the rebalance
// commits offsets 5, 4, 6; B joins; once A's heartbeat says the rebalance
// started, A commits offsets 12, 9, 11 in a transaction that it commits,
// or aborts; then both rejoin. The live report must tell that
// transactional commit during revocation with its outcome, agree with
// what the broker then answers OffsetFetch, and equal the replayed one.
func TestEOSCommitDuringRevocation(t *testing.T) {
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "committed", false: "aborted"}[commit]
		t.Run(name, func(t *testing.T) {
			cluster := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(3, eosTopic))
			jp := startJournaledProxy(t, cluster.ListenAddrs())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			addr := jp.proxy.Addr().String()
			const group = "eos_group"
			a, b := newEOSMember(t, addr, group, "eos-a"), newEOSMember(t, addr, group, "eos-b")

			a.metadata(ctx)
			a.join(ctx)
			a.sync(ctx, map[string][]int32{a.id: {0, 1, 2}})
			a.initProducer(ctx, "eos-A")
			a.commitInTxn(ctx, map[int32]int64{0: 5, 1: 4, 2: 6}, true)

			bJoined := make(chan *kmsg.JoinGroupResponse, 1)
			go func() { bJoined <- b.join(ctx) }()
			for a.heartbeat(ctx) != kerr.RebalanceInProgress.Code {
				select {
				case <-ctx.Done():
					t.Fatal("A's heartbeat never said REBALANCE_IN_PROGRESS")
				case <-time.After(20 * time.Millisecond):
				}
			}
			epoch := a.commitInTxn(ctx, map[int32]int64{0: 12, 1: 9, 2: 11}, commit)
			a.join(ctx)
			<-bJoined
			a.sync(ctx, map[string][]int32{a.id: {0, 1}, b.id: {2}})
			b.sync(ctx, nil)

			want := map[int32]int64{0: 5, 1: 4, 2: 6}
			outcome := timeline.TxnAborted
			if commit {
				want, outcome = map[int32]int64{0: 12, 1: 9, 2: 11}, timeline.TxnCommitted
			}
			if got := a.committed(ctx); !mapsEqual(got, want) {
				t.Fatalf("broker's committed offsets %v; want %v", got, want)
			}

			live := jp.liveJSON(t)
			if replayed := replayJSON(t, jp.dir); string(live) != string(replayed) {
				t.Fatalf("replay differs from live\nlive:\n%s\nreplay:\n%s", live, replayed)
			}
			var r timeline.Report
			if err := json.Unmarshal(live, &r); err != nil {
				t.Fatal(err)
			}
			c, err := revocationCommit(&r, group, 2)
			if err != nil {
				t.Fatalf("%v\n%s", err, live)
			}
			tr := c.Transaction
			if c.MemberID != a.id || c.Generation != 1 || c.Result != "ok" || tr == nil ||
				tr.TransactionalID != "eos-A" || tr.ProducerID != a.pid || tr.ProducerEpoch != epoch || tr.Outcome != outcome || tr.EndedAt == nil {
				t.Errorf("commit during revocation %+v, transaction %+v; want A's (%s) of gen 1, eos-A producer %d epoch %d %s",
					c, tr, a.id, a.pid, epoch, outcome)
			}
			if !mapsEqual(c.Offsets[eosTopic], map[int32]int64{0: 12, 1: 9, 2: 11}) {
				t.Errorf("offsets %v; want 12, 9, 11", c.Offsets)
			}
		})
	}
}

// revocationCommit is the one commit during revocation of group's
// generation gen in r.
func revocationCommit(r *timeline.Report, group string, gen int32) (timeline.CommitReport, error) {
	for _, g := range r.Groups {
		if g.Group != group {
			continue
		}
		for _, gr := range g.Generations {
			if gr.Generation != gen {
				continue
			}
			if len(gr.CommitsDuringRevocation) != 1 {
				return timeline.CommitReport{}, errors.New("not one commit during revocation")
			}
			return gr.CommitsDuringRevocation[0], nil
		}
	}
	return timeline.CommitReport{}, errors.New("generation not in the report")
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
