package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/testkafka"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
	"github.com/kproxy-dev/kproxy/timeline"
)

// These scenarios run franz-go consumers against a kfake cluster through
// kproxy, with a timeline engine fed by the pipeline, and assert the
// story the timeline tells. Heartbeats every 100 ms and a 2 s session keep
// each scenario to a few seconds (kfake has no initial rebalance delay).

const topic = "round_topic"

// liveTimeline is the pipeline's consumer of events: the engine, owned
// under a mutex because the test goroutine reads reports while the
// pipeline adds events. It keeps every event so the test can replay them.
type liveTimeline struct {
	mu      sync.Mutex
	e       *timeline.Engine
	entries []timeline.Entry
	events  []decode.Event
}

var _ pipeline.EventConsumer = (*liveTimeline)(nil)

func newLiveTimeline() *liveTimeline {
	l := &liveTimeline{}
	l.e = timeline.New(timeline.Config{OnEntry: func(e timeline.Entry) { l.entries = append(l.entries, e) }})
	return l
}

func (l *liveTimeline) AddEvents(events []decode.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, events...)
	l.e.AddEvents(events)
}

// group returns the report of one group, or an empty one.
func (l *liveTimeline) group(id string) timeline.GroupReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, g := range l.e.Report().Groups {
		if g.Group == id {
			return g
		}
	}
	return timeline.GroupReport{}
}

// log renders the entries of one group for a failing test.
func (l *liveTimeline) log(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b bytes.Buffer
	for _, e := range l.entries {
		if e.Group == id {
			timeline.WriteEntryText(&b, e)
		}
	}
	return b.String()
}

// env is one kfake cluster with kproxy in front of it.
type env struct {
	cluster *kfake.Cluster
	seed    string
	tl      *liveTimeline
	logged  map[string]bool
}

func startEnv(t *testing.T) *env {
	t.Helper()
	cluster := testkafka.Start(t, kfake.NumBrokers(1), kfake.SeedTopics(3, topic),
		kfake.GroupMinSessionTimeout(100*time.Millisecond),
		kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "100"}))
	tl := newLiveTimeline()
	cfg := proxy.Config{Listen: "127.0.0.1:0", Upstreams: cluster.ListenAddrs(),
		BrokerListeners: map[int32]string{0: "127.0.0.1:0", 1: "127.0.0.1:0", 2: "127.0.0.1:0"},
		DialTimeout:     2 * time.Second, ShutdownTimeout: 2 * time.Second}
	log := zaptest.NewLogger(t, zaptest.Level(zapcore.WarnLevel))
	p, err := proxy.New(cfg, log)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	pl := pipeline.New(pipeline.Config{Log: log, Events: []pipeline.EventConsumer{tl}})
	piped := make(chan error, 1)
	go func() { piped <- pl.Run(context.Background(), p.Queue()) }() // ends with the proxy's queue
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy Run: %v", err)
		}
		if err := <-piped; err != nil {
			t.Errorf("pipeline: %v", err)
		}
	})
	e := &env{cluster: cluster, seed: p.Addr().String(), tl: tl, logged: map[string]bool{}}
	e.produce(t, 30)
	return e
}

// produce writes n records spread over the topic's partitions.
func (e *env) produce(t *testing.T, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seed), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// consumer is a group member that works on each poll for a while, commits
// its processed offsets when partitions are revoked (manual commits), and
// tracks what it owns.
type consumer struct {
	cl     *kgo.Client
	mu     sync.Mutex
	owned  map[int32]bool
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

type consumerOpts struct {
	clientID string
	work     time.Duration
	extra    []kgo.Opt
}

func (e *env) start(t *testing.T, group string, o consumerOpts) *consumer {
	t.Helper()
	if !e.logged[group] {
		// Registered before the consumer's cleanup, so it runs after it.
		e.logged[group] = true
		t.Cleanup(func() {
			if testing.Verbose() || t.Failed() {
				t.Logf("timeline of %s:\n%s", group, e.tl.log(group))
			}
		})
	}
	c := &consumer{owned: map[int32]bool{}, done: make(chan struct{})}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(e.seed), kgo.ClientID(o.clientID), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(2 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { c.set(ps[topic], true) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
			cl.CommitUncommittedOffsets(ctx) // a failure is the timeline's to report
			c.set(ps[topic], false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { c.set(ps[topic], false) }),
	}, o.extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	c.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
			select { // the "work": the group waits for it to rejoin
			case <-ctx.Done():
			case <-time.After(o.work):
			}
			cl.AllowRebalance()
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *consumer) set(ps []int32, own bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range ps {
		if own {
			c.owned[p] = true
		} else {
			delete(c.owned, p)
		}
	}
}

func (c *consumer) partitions() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.owned))
}

// close stops polling and closes the client, which leaves the group
// (dynamic members only).
func (c *consumer) close() {
	if c.closed {
		return
	}
	c.closed = true
	c.cancel()
	<-c.done
	c.cl.Close()
}

func (c *consumer) memberID() string {
	id, _ := c.cl.GroupMetadata()
	return id
}

func waitFor(t *testing.T, tl *liveTimeline, group string, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; timeline:\n%s", timeout, what, tl.log(group))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func owns(c *consumer, ps ...int32) func() bool {
	return func() bool { return slices.Equal(c.partitions(), ps) }
}

// lastStable is the group's latest stable generation.
func lastStable(g timeline.GroupReport) (timeline.GenerationReport, bool) {
	for i := len(g.Generations) - 1; i >= 0; i-- {
		if g.Generations[i].Status == "stable" {
			return g.Generations[i], true
		}
	}
	return timeline.GenerationReport{}, false
}

func member(gen timeline.GenerationReport, id string) (timeline.MemberReport, bool) {
	for _, m := range gen.Members {
		if m.MemberID == id {
			return m, true
		}
	}
	return timeline.MemberReport{}, false
}

// stableWith waits until the timeline shows a stable generation in which
// each member owns exactly want[member] of the topic.
func stableWith(t *testing.T, e *env, group string, want map[*consumer][]int32) timeline.GenerationReport {
	t.Helper()
	var gen timeline.GenerationReport
	waitFor(t, e.tl, group, 20*time.Second, "a stable generation with the expected assignment", func() bool {
		g, ok := lastStable(e.tl.group(group))
		if !ok || len(g.Members) != len(want) {
			return false
		}
		for c, ps := range want {
			m, ok := member(g, c.memberID())
			if !ok || !slices.Equal(m.Assignment[topic], ps) {
				return false
			}
		}
		gen = g
		return true
	})
	return gen
}

func TestScenarioDemo(t *testing.T) {
	e := startEnv(t)
	const group = "demo"
	a := e.start(t, group, consumerOpts{clientID: "consumer-A", work: 300 * time.Millisecond})
	waitFor(t, e.tl, group, 20*time.Second, "A to own 0,1,2", owns(a, 0, 1, 2))
	before := stableWith(t, e, group, map[*consumer][]int32{a: {0, 1, 2}})
	b := e.start(t, group, consumerOpts{clientID: "consumer-B", work: 600 * time.Millisecond})
	gen := stableWith(t, e, group, map[*consumer][]int32{a: {0, 1}, b: {2}})

	if gen.Trigger.Kind != timeline.TriggerMemberJoined || gen.Trigger.Member != b.memberID() {
		t.Errorf("trigger = %+v; want member_joined %s", gen.Trigger, b.memberID())
	}
	if gen.Generation <= before.Generation || gen.Leader != a.memberID() || gen.Protocol != "range" || gen.Mode != timeline.ModeEager {
		t.Errorf("gen %d leader %s protocol %s mode %s; want after %d, leader A, range, eager",
			gen.Generation, gen.Leader, gen.Protocol, gen.Mode, before.Generation)
	}
	if gen.WaitedFor != a.memberID() {
		t.Errorf("waitedFor = %s; want A (%s), which rejoined only from its poll loop", gen.WaitedFor, a.memberID())
	}
	ma, _ := member(gen, a.memberID())
	mb, _ := member(gen, b.memberID())
	if !slices.Equal(ma.Revoked[topic], []int32{2}) || !slices.Equal(mb.Added[topic], []int32{2}) || mb.Status != "joined" {
		t.Errorf("A revoked %v, B added %v status %s; want [2], [2], joined", ma.Revoked, mb.Added, mb.Status)
	}
	var commit *timeline.CommitReport
	for i, c := range gen.CommitsDuringRevocation {
		if c.MemberID == a.memberID() {
			commit = &gen.CommitsDuringRevocation[i]
		}
	}
	if commit == nil || commit.Result != "ok" || len(commit.Offsets[topic]) != 3 || commit.Generation != before.Generation {
		t.Errorf("A's commit during revocation = %+v; want ok, 3 partitions, generation %d", commit, before.Generation)
	}
	if gen.StopTheWorldMs == nil || gen.StartedAt == nil {
		t.Errorf("stopTheWorldMs %v startedAt %v; want both known", gen.StopTheWorldMs, gen.StartedAt)
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
}

func TestScenarioCooperativeFollowUp(t *testing.T) {
	e := startEnv(t)
	const group = "coop"
	coop := []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}
	a := e.start(t, group, consumerOpts{clientID: "consumer-A", work: 50 * time.Millisecond, extra: coop})
	waitFor(t, e.tl, group, 20*time.Second, "A to own 0,1,2", owns(a, 0, 1, 2))
	b := e.start(t, group, consumerOpts{clientID: "consumer-B", work: 50 * time.Millisecond, extra: coop})
	waitFor(t, e.tl, group, 20*time.Second, "A and B to share the partitions", func() bool {
		return len(a.partitions()) == 2 && len(b.partitions()) == 1
	})
	waitFor(t, e.tl, group, 20*time.Second, "a stable follow-up generation", func() bool {
		g, ok := lastStable(e.tl.group(group))
		return ok && g.FollowUpOf != nil
	})
	g := e.tl.group(group)
	follow, _ := lastStable(g)
	var first timeline.GenerationReport
	for _, gen := range g.Generations {
		if gen.Generation == *follow.FollowUpOf {
			first = gen
		}
	}
	if follow.Trigger.Kind != timeline.TriggerFollowUp || follow.Trigger.Member != a.memberID() || follow.FollowUpChain != 1 {
		t.Errorf("follow-up trigger %+v chain %d; want cooperative_follow_up by A, chain 1", follow.Trigger, follow.FollowUpChain)
	}
	if first.Mode != timeline.ModeCooperative || first.Trigger.Kind != timeline.TriggerMemberJoined || len(first.Unassigned[topic]) != 1 {
		t.Errorf("first round mode %s trigger %s unassigned %v; want cooperative, member_joined, one partition", first.Mode, first.Trigger.Kind, first.Unassigned)
	}
	mb, _ := member(follow, b.memberID())
	if !slices.Equal(mb.Added[topic], first.Unassigned[topic]) {
		t.Errorf("B added %v in the follow-up; want what the first round left unassigned, %v", mb.Added[topic], first.Unassigned[topic])
	}
	if follow.Unsettled != "" {
		t.Errorf("unsettled = %q; want settled", follow.Unsettled)
	}
}

func TestScenarioStaticRestart(t *testing.T) {
	e := startEnv(t)
	const group = "static"
	a := e.start(t, group, consumerOpts{clientID: "consumer-A", work: 50 * time.Millisecond, extra: []kgo.Opt{kgo.InstanceID("inst-a")}})
	waitFor(t, e.tl, group, 20*time.Second, "A to own 0,1,2", owns(a, 0, 1, 2))
	b := e.start(t, group, consumerOpts{clientID: "consumer-B", work: 50 * time.Millisecond, extra: []kgo.Opt{kgo.InstanceID("inst-b")}})
	gen := stableWith(t, e, group, map[*consumer][]int32{a: {0, 1}, b: {2}})
	oldB := b.memberID()
	// B joined fresh into this generation, so its restart sends the same
	// metadata: the coordinator swaps its member id without a rebalance.
	b.close() // static members send no LeaveGroup
	b2 := e.start(t, group, consumerOpts{clientID: "consumer-B", work: 50 * time.Millisecond, extra: []kgo.Opt{kgo.InstanceID("inst-b")}})
	waitFor(t, e.tl, group, 20*time.Second, "the restarted B to own 2", owns(b2, 2))
	waitFor(t, e.tl, group, 10*time.Second, "the rejoin without rebalance", func() bool {
		g := e.tl.group(group)
		last := g.Generations[len(g.Generations)-1]
		return len(last.RejoinsWithoutRebalance) == 1
	})
	g := e.tl.group(group)
	last := g.Generations[len(g.Generations)-1]
	if last.Generation != gen.Generation {
		t.Errorf("latest generation %d; want %d: a static restart must not rebalance", last.Generation, gen.Generation)
	}
	rj := last.RejoinsWithoutRebalance[0]
	if rj.InstanceID != "inst-b" || rj.Replaces != oldB || rj.MemberID != b2.memberID() {
		t.Errorf("rejoin = %+v; want inst-b, %s replacing %s", rj, b2.memberID(), oldB)
	}
	if m, _ := member(last, b2.memberID()); !slices.Equal(m.Assignment[topic], []int32{2}) || m.Replaces != oldB {
		t.Errorf("new B member %+v; want assignment [2], replaces %s", m, oldB)
	}
}

func TestScenarioMemberLeaves(t *testing.T) {
	e := startEnv(t)
	const group = "leave"
	a := e.start(t, group, consumerOpts{clientID: "consumer-A", work: 50 * time.Millisecond})
	waitFor(t, e.tl, group, 20*time.Second, "A to own 0,1,2", owns(a, 0, 1, 2))
	b := e.start(t, group, consumerOpts{clientID: "consumer-B", work: 50 * time.Millisecond})
	stableWith(t, e, group, map[*consumer][]int32{a: {0, 1}, b: {2}})
	bID := b.memberID()
	b.close()
	gen := stableWith(t, e, group, map[*consumer][]int32{a: {0, 1, 2}})
	if gen.Trigger.Kind != timeline.TriggerMemberLeft || gen.Trigger.Member != bID {
		t.Errorf("trigger = %+v; want member_left %s", gen.Trigger, bID)
	}
	if len(gen.Departed) != 1 || gen.Departed[0].MemberID != bID || gen.Departed[0].How != timeline.DepartLeft {
		t.Errorf("departed = %+v; want %s left", gen.Departed, bID)
	}
}

// freezer cuts a client off kproxy without closing anything the client
// would notice as a leave: writes fail and new dials are refused.
type freezer struct{ frozen atomic.Bool }

var errFrozen = errors.New("frozen by the test")

func (f *freezer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	if f.frozen.Load() {
		return nil, errFrozen
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return frozenConn{c, f}, nil
}

type frozenConn struct {
	net.Conn
	f *freezer
}

func (c frozenConn) Write(b []byte) (int, error) {
	if c.f.frozen.Load() {
		return 0, errFrozen
	}
	return c.Conn.Write(b)
}

func TestScenarioSessionTimeout(t *testing.T) {
	e := startEnv(t)
	const group = "timeout"
	a := e.start(t, group, consumerOpts{clientID: "consumer-A", work: 50 * time.Millisecond})
	waitFor(t, e.tl, group, 20*time.Second, "A to own 0,1,2", owns(a, 0, 1, 2))
	f := &freezer{}
	b := e.start(t, group, consumerOpts{clientID: "consumer-B", work: 50 * time.Millisecond, extra: []kgo.Opt{kgo.Dialer(f.dial)}})
	stableWith(t, e, group, map[*consumer][]int32{a: {0, 1}, b: {2}})
	bID := b.memberID()
	f.frozen.Store(true) // B stops heartbeating
	t.Cleanup(func() { f.frozen.Store(false) })
	gen := stableWith(t, e, group, map[*consumer][]int32{a: {0, 1, 2}})
	if gen.Trigger.Kind != timeline.TriggerSessionTimeout || gen.Trigger.Member != bID {
		t.Errorf("trigger = %+v; want session_timeout %s", gen.Trigger, bID)
	}
	if len(gen.Departed) != 1 || gen.Departed[0].How != timeline.DepartSessionTimeout || !slices.Equal(gen.Departed[0].Partitions[topic], []int32{2}) {
		t.Errorf("departed = %+v; want %s session_timeout with [2]", gen.Departed, bID)
	}
}

func TestScenarioFailedCommit(t *testing.T) {
	e := startEnv(t)
	const group = "failcommit"
	a := e.start(t, group, consumerOpts{clientID: "consumer-A", work: 50 * time.Millisecond})
	waitFor(t, e.tl, group, 20*time.Second, "A to own 0,1,2", owns(a, 0, 1, 2))
	waitFor(t, e.tl, group, 20*time.Second, "A to consume", func() bool {
		return len(a.cl.UncommittedOffsets()) > 0
	})
	// Kafka answers REBALANCE_IN_PROGRESS to a commit that reaches it
	// while the group completes a rebalance. That moment is hard to hit
	// with a real client, so the coordinator is made to answer A's
	// revocation commit that way.
	e.cluster.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		req := kr.(*kmsg.OffsetCommitRequest)
		if req.Group != group {
			e.cluster.KeepControl()
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, 27
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	b := e.start(t, group, consumerOpts{clientID: "consumer-B", work: 50 * time.Millisecond})
	gen := stableWith(t, e, group, map[*consumer][]int32{a: {0, 1}, b: {2}})
	if len(gen.CommitsDuringRevocation) == 0 {
		t.Fatalf("no commit during revocation; timeline:\n%s", e.tl.log(group))
	}
	c := gen.CommitsDuringRevocation[0]
	if c.MemberID != a.memberID() || !c.Failed || c.Result != "failed" {
		t.Errorf("commit = %+v; want A's, failed", c)
	}
	for p, name := range c.Errors[topic] {
		if name != "REBALANCE_IN_PROGRESS" {
			t.Errorf("partition %d error %q; want REBALANCE_IN_PROGRESS", p, name)
		}
	}
	if !strings.Contains(e.tl.log(group), "FAILED") {
		t.Errorf("no live entry flags the failed commit")
	}
}

func TestScenarioKIP848(t *testing.T) {
	e := startEnv(t)
	const group = "kip848"
	next := []kgo.Opt{kgo.ServerSideBalancer()} // after the range balancer, as kgo requires
	a := e.start(t, group, consumerOpts{clientID: "consumer-A", work: 50 * time.Millisecond, extra: next})
	waitFor(t, e.tl, group, 20*time.Second, "A to own 0,1,2", owns(a, 0, 1, 2))
	b := e.start(t, group, consumerOpts{clientID: "consumer-B", work: 50 * time.Millisecond, extra: next})
	waitFor(t, e.tl, group, 20*time.Second, "A and B to share the partitions", func() bool {
		return len(a.partitions())+len(b.partitions()) == 3 && len(b.partitions()) > 0
	})
	var gen timeline.GenerationReport
	waitFor(t, e.tl, group, 20*time.Second, "a reconciled epoch with both members", func() bool {
		g, ok := lastStable(e.tl.group(group))
		ma, okA := member(g, a.memberID())
		mb, okB := member(g, b.memberID())
		gen = g
		return ok && okA && okB && len(ma.Assignment[topic])+len(mb.Assignment[topic]) == 3
	})
	g := e.tl.group(group)
	if g.GroupProtocol != "consumer" || gen.Mode != timeline.ModeConsumer || *gen.StopTheWorldMs != 0 {
		t.Errorf("group protocol %s mode %s stop-the-world %v; want consumer, consumer, 0", g.GroupProtocol, gen.Mode, *gen.StopTheWorldMs)
	}
	if gen.Trigger.Kind != timeline.TriggerMemberJoined || gen.Trigger.Member != b.memberID() {
		t.Errorf("trigger = %+v; want member_joined %s", gen.Trigger, b.memberID())
	}
	mb, _ := member(gen, b.memberID())
	if !slices.Equal(mb.Assignment[topic], b.partitions()) {
		t.Errorf("B's assignment by topic name = %v; want %v", mb.Assignment, b.partitions())
	}
	revoked := false
	for _, cm := range g.ConsumerMembers {
		if cm.MemberID != a.memberID() {
			continue
		}
		for _, step := range cm.Epochs {
			if len(step.Revoked[topic]) > 0 {
				revoked = true
			}
		}
	}
	if !revoked {
		t.Errorf("A's epochs show no revocation by topic name: %+v", g.ConsumerMembers)
	}
}
