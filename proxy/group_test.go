package proxy

import (
	"context"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// member is a group consumer that tracks the partitions it owns.
type member struct {
	cl       *kgo.Client
	clientID string
	mu       sync.Mutex
	owned    map[int32]bool
}

func (m *member) add(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps[groupTopic] {
		m.owned[p] = true
	}
}

func (m *member) remove(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps[groupTopic] {
		delete(m.owned, p)
	}
}

func (m *member) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.owned))
}

const (
	groupTopic      = "group-topic"
	groupPartitions = 4
)

// startMember starts a consumer in group, polling until the test ends.
func startMember(t *testing.T, seed, group, clientID string, opts ...kgo.Opt) *member {
	t.Helper()
	m := &member{owned: make(map[int32]bool), clientID: clientID}
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(seed), dialFrom("127.0.0.2"), kgo.ClientID(clientID),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(groupTopic),
		kgo.OnPartitionsAssigned(m.add), kgo.OnPartitionsRevoked(m.remove), kgo.OnPartitionsLost(m.remove),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return m
}

// settled reports whether the members split every partition between them,
// each owning some.
func settled(ms ...*member) bool {
	var all []int32
	for _, m := range ms {
		ps := m.partitions()
		if len(ps) == 0 {
			return false
		}
		all = append(all, ps...)
	}
	slices.Sort(all)
	return slices.Equal(all, []int32{0, 1, 2, 3})
}

// TestConsumerGroups runs two-member groups of each protocol through kproxy
// and checks that the observer saw the right members, generations (member
// epochs for KIP-848) and assignments.
func TestConsumerGroups(t *testing.T) {
	cluster := startKfake(t, 3, kfake.SeedTopics(groupPartitions, groupTopic),
		kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "100"}))
	rec := &recorder{}
	log, logs := observedLogger()
	p := newProxy(t, testConfig(cluster.ListenAddrs()...), log)
	pl := runProxy(t, p, rec)
	seed := p.Addr().String()

	for _, tc := range []struct {
		name     string
		protocol string // chosen assignor; "" for KIP-848
		opts     []kgo.Opt
	}{
		{name: "eager range", protocol: "range", opts: []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
		{name: "cooperative-sticky", protocol: "cooperative-sticky", opts: []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
		{name: "KIP-848", opts: []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := "group-" + tc.name
			a := startMember(t, seed, group, "member-a", tc.opts...)
			waitFor(t, 20*time.Second, "member a to own every partition", func() bool { return settled(a) })
			b := startMember(t, seed, group, "member-b", tc.opts...)
			waitFor(t, 30*time.Second, "the two members to split the partitions", func() bool { return settled(a, b) })

			api := "JoinGroup"
			if tc.protocol == "" {
				api = "ConsumerGroupHeartbeat"
			}
			for _, m := range []*member{a, b} {
				if tc.protocol == "" {
					waitFor(t, 10*time.Second, "the observer to see the KIP-848 assignment", func() bool {
						return checkHeartbeats(rec, group, m) == ""
					})
				} else {
					waitFor(t, 10*time.Second, "the observer to see the member's join and sync", func() bool {
						return checkClassic(rec, group, tc.protocol, m) == ""
					})
				}
				memberID, gen := m.cl.GroupMetadata()
				lines := logs.FilterMessage("group exchange").FilterField(zap.String("group", group)).
					FilterField(zap.String("api", api)).FilterField(zap.String("member_id", memberID)).
					FilterField(zap.Int32("generation", gen))
				if lines.Len() == 0 {
					t.Errorf("no %s log line for member %s generation %d", api, memberID, gen)
					continue
				}
				fields := lines.All()[0].ContextMap()
				for _, k := range []string{"instance_id", "api_version", "error", "latency", "client_id", "client_addr", "broker_id"} {
					if _, ok := fields[k]; !ok {
						t.Errorf("log line %v has no %s", fields, k)
					}
				}
				if fields["client_id"] != m.clientID {
					t.Errorf("log line client_id %v; want %s", fields["client_id"], m.clientID)
				}
			}
		})
	}
	if st := pl.Stats(); st.Undecoded != 0 {
		t.Errorf("%d exchanges did not decode; want 0", st.Undecoded)
	}
	for _, remote := range cluster.Accepted() {
		if host, _, _ := net.SplitHostPort(remote); host == "127.0.0.2" {
			t.Errorf("kfake accepted a connection from %s: a group client bypassed kproxy", remote)
		}
	}
}

// checkClassic returns "" when the observer saw m join at its current
// generation with the expected protocol and receive the partitions it owns
// in its last SyncGroup, or what is missing.
func checkClassic(rec *recorder, group, protocol string, m *member) string {
	memberID, gen := m.cl.GroupMetadata()
	owned := m.partitions()
	_, events := rec.snapshot()
	joined := false
	var lastSync *decode.SyncGroup
	for i := range events {
		e := &events[i]
		if e.Group != group || !e.Responded() {
			continue
		}
		switch {
		case e.JoinGroup != nil:
			j := e.JoinGroup
			if j.ErrorCode == 0 && j.AssignedMemberID == memberID && j.Generation == gen && j.ProtocolName == protocol {
				joined = true
			}
		case e.SyncGroup != nil:
			if s := e.SyncGroup; s.MemberID == memberID && s.ErrorCode == 0 {
				lastSync = s
			}
		}
	}
	switch {
	case !joined:
		return "no JoinGroup response for " + memberID + " at its generation with protocol " + protocol
	case lastSync == nil:
		return "no SyncGroup for " + memberID
	case lastSync.Generation != gen:
		return "last SyncGroup not at the member's generation"
	case lastSync.Assignment == nil:
		return "last SyncGroup has no decoded assignment"
	}
	var got []int32
	for _, tp := range lastSync.Assignment.Partitions {
		if tp.Topic == groupTopic {
			got = append(got, tp.Partitions...)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, owned) {
		return "assignment differs from what the member owns"
	}
	return ""
}

// checkHeartbeats returns "" when the observer saw m's KIP-848 heartbeats:
// its member id assigned, its current epoch, and a last assignment equal to
// what it owns.
func checkHeartbeats(rec *recorder, group string, m *member) string {
	memberID, epoch := m.cl.GroupMetadata()
	owned := m.partitions()
	_, events := rec.snapshot()
	var topicID decode.TopicID
	sawEpoch := false
	var last []decode.TopicIDPartitions
	for i := range events {
		e := &events[i]
		if e.Metadata != nil {
			for _, tp := range e.Metadata.Topics {
				if tp.Name == groupTopic {
					topicID = tp.TopicID
				}
			}
		}
		h := e.ConsumerGroupHeartbeat
		if h == nil || e.Group != group || !e.Responded() || h.ErrorCode != 0 {
			continue
		}
		if h.AssignedMemberID != memberID && h.MemberID != memberID {
			continue
		}
		if h.AssignedEpoch == epoch {
			sawEpoch = true
		}
		if h.Assignment != nil {
			last = h.Assignment
		}
	}
	if !sawEpoch {
		return "no heartbeat response at the member's epoch"
	}
	if topicID.IsZero() {
		return "no Metadata event naming the topic's id"
	}
	var got []int32
	for _, tp := range last {
		if tp.TopicID == topicID {
			got = append(got, tp.Partitions...)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, owned) {
		return "last assignment differs from what the member owns"
	}
	return ""
}
