//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/diagnose"
)

// Each finding kind that franz-go clients can cause on kfake, reproduced
// through a journaling kproxy and diagnosed from the journal. Timings are
// real, so the goldens hold a projection of each finding without the
// numbers that depend on them: kind, severity, the members' client and
// instance ids, the partitions, and the evidence's keys.

// commitRaw sends an OffsetCommit of topic t through m's client as member
// id of generation gen, and returns the partitions' error codes.
func commitRaw(t *testing.T, m *diagMember, group, id string, gen int32, offsets map[int32]int64) []int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = group, id, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rt.TopicID = topicID(t, m, "t") // OffsetCommit v10 names topics by id
	for _, p := range slices.Sorted(func(yield func(int32) bool) {
		for p := range offsets {
			if !yield(p) {
				return
			}
		}
	}) {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, offsets[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	var codes []int16
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes = append(codes, rp.ErrorCode)
		}
	}
	return codes
}

// topicID asks the cluster for topic's id through m's client.
func topicID(t *testing.T, m *diagMember, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil || len(resp.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	return resp.Topics[0].TopicID
}

// projected is a finding without the numbers that depend on real timing.
type projected struct {
	Kind        diagnose.Kind      `json:"kind"`
	Group       string             `json:"group"`
	Severity    diagnose.Severity  `json:"severity"`
	ClientIDs   []string           `json:"clientIds"`
	InstanceIDs []string           `json:"instanceIds"`
	Partitions  map[string][]int32 `json:"partitions"`
	Evidence    []string           `json:"evidenceKeys"`
	Linked      bool               `json:"linked"`
}

func project(fs []diagnose.Finding) []projected {
	out := []projected{}
	for _, f := range fs {
		p := projected{Kind: f.Kind, Group: f.Group, Severity: f.Severity, ClientIDs: []string{}, InstanceIDs: []string{},
			Partitions: f.Partitions, Linked: len(f.Links) > 0}
		for _, m := range f.Members {
			p.ClientIDs = append(p.ClientIDs, m.ClientID)
			if m.InstanceID != "" {
				p.InstanceIDs = append(p.InstanceIDs, m.InstanceID)
			}
		}
		slices.Sort(p.ClientIDs)
		p.ClientIDs = slices.Compact(p.ClientIDs)
		slices.Sort(p.InstanceIDs)
		p.InstanceIDs = slices.Compact(p.InstanceIDs)
		for k := range f.Evidence {
			p.Evidence = append(p.Evidence, k)
		}
		slices.Sort(p.Evidence)
		out = append(out, p)
	}
	return out
}

// diagnoseDir runs `kproxy diagnose --format json` on a journal.
func diagnoseDir(t *testing.T, dir string) []diagnose.Finding {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := runDiagnose(context.Background(), []string{dir}, diagnoseOptions{format: "json", journalWindow: journalWindow{stormRebalances: 3, stormWindow: 5 * time.Minute}}, &out, &errOut); err != nil {
		t.Fatalf("diagnose: %v\n%s", err, errOut.String())
	}
	var doc diagnose.Document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("diagnose output: %v\n%s", err, out.String())
	}
	return doc.Findings
}

// diagGolden compares the projection of fs with testdata/diagnose-name.json.
func diagGolden(t *testing.T, name string, fs []diagnose.Finding) {
	t.Helper()
	got, err := json.MarshalIndent(project(fs), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "diagnose-"+name+".json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -tags integration,browser -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		var b bytes.Buffer
		_ = diagnose.WriteText(&b, fs)
		t.Errorf("%s differs; got:\n%s\nfindings:\n%s", path, got, b.String())
	}
}

// kindsOf is the kinds of fs in order.
func kindsOf(fs []diagnose.Finding) []diagnose.Kind {
	var ks []diagnose.Kind
	for _, f := range fs {
		ks = append(ks, f.Kind)
	}
	return ks
}

// diagScenario is one reproduction: run drives franz-go clients through
// the proxy at addr, in group "g" on topic t (three partitions) and u
// (one partition).
type diagScenario struct {
	name string
	run  func(t *testing.T, addr string)
	want []diagnose.Kind
}

var diagScenarios = []diagScenario{
	{"healthy", runHealthy, nil},
	{"session_timeout", runSessionTimeout, []diagnose.Kind{diagnose.SessionTimeoutWarning, diagnose.SessionTimeoutEviction}},
	{"rolling_restart", runRollingRestart, []diagnose.Kind{diagnose.RebalanceLoop, diagnose.RollingRestart}},
	{"duplicate_instance", runDuplicateInstance, []diagnose.Kind{diagnose.StaticMemberFenced, diagnose.DuplicateInstanceID}},
	{"poll_timeout", runPollTimeout, []diagnose.Kind{diagnose.PollTimeoutWarning, diagnose.SessionTimeoutEviction, diagnose.PollTimeoutEviction}},
	{"duplicate_window", runDuplicateWindow, []diagnose.Kind{diagnose.DuplicateWindow}},
	{"commits", runCommits, []diagnose.Kind{diagnose.BackwardsCommit, diagnose.StaleOwnerCommit, diagnose.FailedRevocationCommit}},
	{"smells", runSmells, []diagnose.Kind{diagnose.TimeoutsMisordered, diagnose.HeterogeneousSubscriptions, diagnose.MixedAssignors, diagnose.HeartbeatTooSlow}},
}

// TestDiagnoseOnKfake runs each scenario on its own kfake cluster through
// its own journaling kproxy, then diagnoses the journal.
func TestDiagnoseOnKfake(t *testing.T) {
	for _, sc := range diagScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			cluster := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(3, "t"), kfake.SeedTopics(1, "u"),
				kfake.GroupMinSessionTimeout(100*time.Millisecond))
			jp := startJournaledProxy(t, cluster.ListenAddrs())
			sc.run(t, jp.proxy.Addr().String())
			jp.stop()
			fs := diagnoseDir(t, jp.dir)
			if got := kindsOf(fs); !slices.Equal(got, sc.want) {
				var b bytes.Buffer
				_ = diagnose.WriteText(&b, fs)
				_ = replay(context.Background(), []string{jp.dir}, replayOptions{format: "text", journalWindow: journalWindow{stormRebalances: 3, stormWindow: 5 * time.Minute}}, &b, &b)
				t.Fatalf("got kinds %v; want %v\n%s", got, sc.want, b.String())
			}
			diagGolden(t, sc.name, fs)
			if sc.name == "rolling_restart" {
				f := fs[slices.IndexFunc(fs, func(f diagnose.Finding) bool { return f.Kind == diagnose.RollingRestart })]
				if f.Evidence["instances"] != 3.0 || f.Evidence["rebalances"].(float64) < 3 {
					t.Errorf("rollout of %v instances costing %v rebalances; want 3 instances and a rebalance or more each",
						f.Evidence["instances"], f.Evidence["rebalances"])
				}
			}
			if sc.name == "duplicate_window" {
				if got := fs[0].Evidence["records"]; got != 60.0 {
					t.Errorf("duplicate window of %v records; want 60 (read up to 100, committed 40)", got)
				}
			}
		})
	}
}

// runHealthy: two members share the topic for a while, then both stop
// the normal way. Nothing is wrong, so nothing may be found.
func runHealthy(t *testing.T, addr string) { runQuiet(8*time.Second)(t, nil, addr) }

// runSessionTimeout: a static member stops without leaving (static
// members send no LeaveGroup) and its session expires.
func runSessionTimeout(t *testing.T, addr string) {
	rng := kgo.Balancers(kgo.RangeBalancer()) // no cooperative follow-up generation
	a := startDiagMember(t, addr, "g", "st-a", []string{"t"}, rng)
	a.groupMeta(t)
	b := startDiagMember(t, addr, "g", "st-b", []string{"t"}, rng, kgo.InstanceID("st-b"), kgo.SessionTimeout(1500*time.Millisecond))
	b.groupMeta(t)
	time.Sleep(2 * time.Second)
	b.stop()
	waitGeneration(t, a, 3) // gen 1 a, gen 2 a and b, gen 3 a alone after b's expiry
	time.Sleep(time.Second)
	a.stop()
}

// waitGeneration waits until m is in generation gen or later.
func waitGeneration(t *testing.T, m *diagMember, gen int32) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, g := m.cl.GroupMetadata(); g >= gen {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("never reached generation %d", gen)
}

// runRollingRestart: three dynamic members restarted one by one, each
// replaced by a new process with the same client id.
func runRollingRestart(t *testing.T, addr string) {
	ids := []string{"roll-1", "roll-2", "roll-3"}
	ms := make([]*diagMember, len(ids))
	for i, id := range ids {
		ms[i] = startDiagMember(t, addr, "g", id, []string{"t"})
		ms[i].groupMeta(t)
	}
	time.Sleep(time.Second)
	for i, id := range ids {
		_, gen := ms[(i+1)%len(ms)].cl.GroupMetadata()
		ms[i].stop()
		waitGeneration(t, ms[(i+1)%len(ms)], gen+1)
		time.Sleep(500 * time.Millisecond)
		ms[i] = startDiagMember(t, addr, "g", id, []string{"t"})
		ms[i].groupMeta(t)
		time.Sleep(time.Second)
	}
	for _, m := range ms {
		m.stop()
	}
}

// runPollTimeout: b takes records and then "processes" them for longer
// than its rebalance timeout without polling (kgo.BlockRebalanceOnPoll:
// it cannot rejoin until it polls again); c joins, the group rebalances,
// and the coordinator ends the join phase without b.
func runPollTimeout(t *testing.T, addr string) {
	produce(t, addr, "t", 30)
	// a waits in its JoinGroup while the group waits for b. kfake, unlike
	// Apache Kafka, expires the session of a member whose JoinGroup it
	// holds, and the join phase lasts the largest rebalance timeout, which
	// is above every session timeout: a is evicted too, by its session.
	rng := kgo.Balancers(kgo.RangeBalancer())
	a := startDiagMember(t, addr, "g", "poll-a", []string{"t"}, rng)
	a.groupMeta(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.ClientID("poll-b"),
		rng, kgo.BlockRebalanceOnPoll(), kgo.HeartbeatInterval(300*time.Millisecond), kgo.SessionTimeout(3*time.Second),
		kgo.RebalanceTimeout(4*time.Second), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for cl.PollFetches(ctx).NumRecords() == 0 && ctx.Err() == nil {
	}
	// b holds its records and does not poll again.
	_, gen := a.cl.GroupMetadata()
	c := startDiagMember(t, addr, "g", "poll-c", []string{"t"}, rng)
	waitGeneration(t, c, gen+1)
	time.Sleep(time.Second)
	cl.AllowRebalance()
	cl.Close()
	c.stop()
	a.stop()
}

// produce writes n records to topic through addr.
func produce(t *testing.T, addr, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// runDuplicateWindow: a reads the 100 records of each partition of t but
// has committed only 40 of each; b joins and takes t[2], resuming from the
// commit: the 60 records a read past it are processed again.
func runDuplicateWindow(t *testing.T, addr string) {
	produceSpread(t, addr, "t", 3, 100)
	opts := []kgo.Opt{kgo.DisableAutoCommit(), kgo.Balancers(kgo.RangeBalancer())}
	a := startDiagMember(t, addr, "g", "dw-a", []string{"t"}, opts...)
	aID, aGen := a.groupMeta(t)
	waitPolled(t, a, 300)
	time.Sleep(time.Second) // a's next Fetch asks from 100 on every partition
	if codes := commitRaw(t, a, "g", aID, aGen, map[int32]int64{0: 40, 1: 40, 2: 40}); slices.ContainsFunc(codes, func(c int16) bool { return c != 0 }) {
		t.Fatalf("a's commit: %v", codes)
	}
	b := startDiagMember(t, addr, "g", "dw-b", []string{"t"}, opts...)
	waitGeneration(t, b, aGen+1)
	time.Sleep(time.Second)
	b.stop()
	a.stop()
}

// waitPolled waits until m's poll loop has received n records.
func waitPolled(t *testing.T, m *diagMember, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for m.polled.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("polled %d records after 20 s; want %d", m.polled.Load(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// produceSpread writes n records to each of the topic's partitions.
func produceSpread(t *testing.T, addr, topic string, partitions int32, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for p := range partitions {
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte{byte(i)}}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runDuplicateInstance: two processes configured with one
// group.instance.id, running at the same time.
func runDuplicateInstance(t *testing.T, addr string) {
	opts := []kgo.Opt{kgo.InstanceID("dup"), kgo.SessionTimeout(10 * time.Second), kgo.RebalanceTimeout(15 * time.Second),
		kgo.Balancers(kgo.RangeBalancer())}
	a := startDiagMember(t, addr, "g", "dup-a", []string{"t"}, opts...)
	a.groupMeta(t)
	time.Sleep(500 * time.Millisecond)
	b := startDiagMember(t, addr, "g", "dup-b", []string{"t"}, opts...)
	b.groupMeta(t)
	time.Sleep(4 * time.Second)
	b.stop()
	a.stop()
}

// runCommits: b owns t[2]; a commits t[2] with its own member id (stale
// owner, and below b's commit: backwards), then commits with a
// generation the group has left (refused).
func runCommits(t *testing.T, addr string) {
	opts := []kgo.Opt{kgo.DisableAutoCommit(), kgo.Balancers(kgo.RangeBalancer())}
	a := startDiagMember(t, addr, "g", "commit-a", []string{"t"}, opts...)
	a.groupMeta(t)
	b := startDiagMember(t, addr, "g", "commit-b", []string{"t"}, opts...)
	b.groupMeta(t)
	waitGeneration(t, a, 2)
	time.Sleep(500 * time.Millisecond)
	aID, aGen := a.groupMeta(t)
	bID, bGen := b.groupMeta(t)
	if aGen != bGen {
		t.Fatalf("a in generation %d, b in %d", aGen, bGen)
	}
	if codes := commitRaw(t, b, "g", bID, bGen, map[int32]int64{2: 50}); slices.ContainsFunc(codes, func(c int16) bool { return c != 0 }) {
		t.Fatalf("b's commit: %v", codes)
	}
	time.Sleep(100 * time.Millisecond)
	commitRaw(t, a, "g", aID, aGen, map[int32]int64{2: 30})
	time.Sleep(100 * time.Millisecond)
	codes := commitRaw(t, a, "g", aID, aGen-1, map[int32]int64{0: 70})
	if len(codes) != 1 || !errors.Is(kerr.ErrorForCode(codes[0]), kerr.IllegalGeneration) {
		t.Fatalf("a's commit of an old generation: %v; want ILLEGAL_GENERATION", codes)
	}
	time.Sleep(500 * time.Millisecond)
	b.stop()
	a.stop()
}

// runSmells: a offers range and consumes t, with a heartbeat interval of
// half its session timeout and a rebalance timeout below it; b offers
// cooperative-sticky and range and consumes t and u.
func runSmells(t *testing.T, addr string) {
	a := startDiagMember(t, addr, "g", "smell-a", []string{"t"}, kgo.Balancers(kgo.RangeBalancer()),
		kgo.HeartbeatInterval(time.Second), kgo.SessionTimeout(2*time.Second), kgo.RebalanceTimeout(1500*time.Millisecond))
	a.groupMeta(t)
	b := startDiagMember(t, addr, "g", "smell-b", []string{"t", "u"}, kgo.Balancers(kgo.CooperativeStickyBalancer(), kgo.RangeBalancer()))
	b.groupMeta(t)
	time.Sleep(8 * time.Second)
	b.stop()
	a.stop()
}

// runQuiet returns a scenario of a healthy group: two members share t for
// d, then both stop the normal way (LeaveGroup). Nothing is wrong, so
// nothing may be found.
func runQuiet(d time.Duration) func(*testing.T, *kfake.Cluster, string) {
	return func(t *testing.T, _ *kfake.Cluster, addr string) {
		a := startDiagMember(t, addr, "g", "healthy-a", []string{"t"})
		a.groupMeta(t)
		b := startDiagMember(t, addr, "g", "healthy-b", []string{"t"})
		b.groupMeta(t)
		time.Sleep(d)
		b.stop()
		a.stop()
	}
}
