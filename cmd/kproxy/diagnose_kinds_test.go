//go:build integration && browser

package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/internal/headless"
)

// The partition kinds, the eager large group and a quiet group watched
// for minutes, reproduced as TestDiagnoseOnKfake's kinds are: franz-go
// clients on kfake through a journaling kproxy, diagnosed from the
// journal by `kproxy diagnose --format json` with its default thresholds
// (a large group is 10 members; a partition unowned, or a member without
// partitions, for 30 s; a flap within 10 minutes). The goldens are
// testdata/diagnose-<name>.json, projected as diagGolden does.

// kindScenario is one reproduction on a cluster with topics t (three
// partitions), u (one) and w (twelve), in group "g".
type kindScenario struct {
	name string
	run  func(t *testing.T, c *kfake.Cluster, addr string)
	want []diagnose.Kind
}

var kindScenarios = []kindScenario{
	// First, so that the others run beside it (two at a time on two cores).
	{"healthy_minutes", runQuiet(90 * time.Second), nil},
	{"eager_large_group", runEagerLargeGroup, []diagnose.Kind{diagnose.EagerLargeGroup}},
	{"partition_flap", runPartitionFlap, []diagnose.Kind{diagnose.RebalanceLoop, diagnose.PartitionFlap}},
	{"partition_unowned", runPartitionUnowned, []diagnose.Kind{diagnose.PartitionUnowned}},
	{"member_without_partitions", runMemberWithoutPartitions, []diagnose.Kind{diagnose.MemberWithoutPartitions}},
}

// TestDiagnoseKindsOnKfake runs each kindScenario on its own kfake
// cluster through its own journaling kproxy, then diagnoses the journal.
func TestDiagnoseKindsOnKfake(t *testing.T) {
	for _, sc := range kindScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			cluster := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(3, "t"), kfake.SeedTopics(1, "u"),
				kfake.SeedTopics(12, "w"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
			jp := startJournaledProxy(t, cluster.ListenAddrs())
			sc.run(t, cluster, jp.proxy.Addr().String())
			jp.stop()
			fs := diagnoseDir(t, jp.dir)
			if got := kindsOf(fs); !slices.Equal(got, sc.want) {
				var b bytes.Buffer
				_ = diagnose.WriteText(&b, fs)
				_ = replay(context.Background(), []string{jp.dir}, replayOptions{format: "text", journalWindow: journalWindow{stormRebalances: 3, stormWindow: 5 * time.Minute}}, &b, &b)
				t.Fatalf("got kinds %v; want %v\n%s", got, sc.want, b.String())
			}
			diagGolden(t, sc.name, fs)
			checkKindEvidence(t, sc.name, fs)
			checkKindPage(t, jp.dir, fs)
		})
	}
}

// checkKindEvidence checks the numbers of each scenario's finding that do
// not depend on timing (the golden has the evidence's keys only).
func checkKindEvidence(t *testing.T, name string, fs []diagnose.Finding) {
	t.Helper()
	find := func(k diagnose.Kind) diagnose.Finding {
		return fs[slices.IndexFunc(fs, func(f diagnose.Finding) bool { return f.Kind == k })]
	}
	type check struct {
		key  string
		want any
	}
	var f diagnose.Finding
	var checks []check
	switch name {
	case "eager_large_group":
		f = find(diagnose.EagerLargeGroup)
		checks = []check{{"members", 10.0}, {"protocol", "range"}, {"eagerRebalances", 1.0}, {"threshold", 10.0}}
	case "partition_flap":
		f = find(diagnose.PartitionFlap)
		// t[1] goes a→b→a→b→a and t[2] b→c→b→c→b (see runPartitionFlap).
		if got := fmt.Sprint(f.Partitions); got != "map[t:[1 2]]" {
			t.Errorf("flapping partitions %s; want map[t:[1 2]]", got)
		}
		// Second returns: t[1] to b in generation 5 (c2 joined) and to a
		// in 6 (c2 left), t[2] to b in 6.
		checks = []check{{"flaps", 3.0}}
		if got := fmt.Sprint(f.Evidence["generations"]); got != "[5 6]" {
			t.Errorf("flaps in generations %s; want [5 6]", got)
		}
	case "partition_unowned":
		f = find(diagnose.PartitionUnowned)
		checks = []check{{"generation", 1.0}, {"protocol", "range"}}
		if got := fmt.Sprint(f.Partitions); got != "map[t:[2]]" {
			t.Errorf("unowned partitions %s; want map[t:[2]]", got)
		}
		if ms, _ := f.Evidence["unownedMs"].(float64); ms < 30000 {
			t.Errorf("unowned for %v ms; want 30 s or more", f.Evidence["unownedMs"])
		}
		if len(f.Members) != 1 || f.Members[0].ClientID != "unowned-a" {
			t.Errorf("naming %v; want the leader unowned-a, whose assignor left t[2] out", f.Members)
		}
	case "member_without_partitions":
		f = find(diagnose.MemberWithoutPartitions)
		checks = []check{{"generation", 2.0}, {"members", 2.0}, {"partitions", 1.0}}
		if f.Severity != diagnose.Info || len(f.Members) != 1 || f.Members[0].ClientID != "idle-b" {
			t.Errorf("%s naming %v; want info naming idle-b (more members than partitions)", f.Severity, f.Members)
		}
	}
	for _, c := range checks {
		if got := f.Evidence[c.key]; got != c.want {
			t.Errorf("%s evidence %s = %v; want %v", f.Kind, c.key, got, c.want)
		}
	}
}

// checkKindPage writes the journal's page with `kproxy replay --format
// html` and opens it in Chromium: the group list counts fs with their
// worst severity, the group's findings panel lists them, and each finding
// puts a marker on the lane of each member it names.
func checkKindPage(t *testing.T, dir string, fs []diagnose.Finding) {
	t.Helper()
	page := filepath.Join(t.TempDir(), "report.html")
	if out, err := runKproxy(t, "replay", dir, "--format", "html", "-o", page); err != nil {
		t.Fatalf("replay --format html: %v\n%s", err, out)
	}
	worst, wantMarks := "", []string{}
	for _, f := range fs {
		if worst == "" || f.Severity == diagnose.Critical || f.Severity == diagnose.Warning && worst == string(diagnose.Info) {
			worst = string(f.Severity)
		}
		for _, m := range f.Members {
			wantMarks = append(wantMarks, m.ClientID+" "+string(f.Kind))
		}
	}
	slices.Sort(wantMarks)
	b := headless.Start(t, headless.Options{})
	b.Run(t, 20*time.Second, chromedp.Navigate("file://"+page+"#/"))
	cell := `document.querySelector('tr[data-group="g"] td.findings')`
	b.WaitJS(t, "the group's row", `!!`+cell, 10*time.Second)
	if got, want := headless.Eval[string](t, b, cell+`.dataset.findings + ' ' + (`+cell+`.dataset.worst || '')`), fmt.Sprint(len(fs), " ", worst); got != want {
		t.Errorf("the list's findings cell says %q; want %q", got, want)
	}
	b.Run(t, 20*time.Second, chromedp.Navigate("file://"+page+"#/groups/g"))
	b.WaitJS(t, "the findings panel", `!!document.getElementById('findings-title')`, 10*time.Second)
	if got, want := headless.Eval[string](t, b, `document.getElementById('findings-title').textContent`), fmt.Sprintf("Findings (%d)", len(fs)); got != want {
		t.Errorf("the findings panel's title %q; want %q", got, want)
	}
	marks := headless.Eval[[]string](t, b, `[...document.querySelectorAll('#chart path.finding-mark')].map(p => p.closest('g.lane').dataset.client + ' ' + p.dataset.kind).sort()`)
	if !slices.Equal(marks, wantMarks) {
		t.Errorf("finding markers on the lanes %q; want %q", marks, wantMarks)
	}
}

// holdUnowned is how long the partition and idle scenarios keep their
// generation: longer than the diagnosis' UnownedAfter (30 s by default).
const holdUnowned = 32 * time.Second

// runEagerLargeGroup: ten static members of an eager (range) group on w
// form one generation. a joins alone and takes records, then blocks its
// rebalance (kgo.BlockRebalanceOnPoll) while the nine others send their
// JoinGroup, so that the coordinator's join phase holds all of them
// (kfake has no initial rebalance delay). Static members send no
// LeaveGroup when they stop, so the group ends without a rebalance.
func runEagerLargeGroup(t *testing.T, c *kfake.Cluster, addr string) {
	produceSpread(t, addr, "w", 12, 1)
	opts := []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(10 * time.Second), kgo.RebalanceTimeout(15 * time.Second)}
	var mu sync.Mutex
	joined := map[string]bool{}
	c.ControlKey(int16(kmsg.JoinGroup), func(r kmsg.Request) (kmsg.Response, error, bool) {
		if req := r.(*kmsg.JoinGroupRequest); req.InstanceID != nil && *req.InstanceID != "eager-a" {
			mu.Lock()
			joined[*req.InstanceID] = true
			mu.Unlock()
		}
		return nil, nil, false // observed, handled by the cluster
	})
	a, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("w"),
		kgo.ClientID("eager-a"), kgo.InstanceID("eager-a"), kgo.BlockRebalanceOnPoll(), kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for a.PollFetches(ctx).NumRecords() == 0 {
		if ctx.Err() != nil {
			t.Fatal("eager-a never received a record")
		}
	}
	// a holds its records: its rebalance waits for AllowRebalance.
	var ms []*diagMember
	for i := 1; i <= 9; i++ {
		id := fmt.Sprintf("eager-%02d", i)
		ms = append(ms, startDiagMember(t, addr, "g", id, []string{"w"}, append([]kgo.Opt{kgo.InstanceID(id)}, opts...)...))
	}
	waitFor(t, "the nine JoinGroups", func() bool { mu.Lock(); defer mu.Unlock(); return len(joined) == 9 })
	pollCtx, stopPoll := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() { // a polls again, allowing each rebalance, until stopPoll
		defer close(polled)
		for pollCtx.Err() == nil {
			a.AllowRebalance()
			a.PollFetches(pollCtx)
		}
	}()
	for _, m := range ms {
		waitGeneration(t, m, 2)
	}
	for _, m := range ms {
		if _, gen := m.cl.GroupMetadata(); gen != 2 {
			t.Fatalf("a member is in generation %d; want all ten in generation 2", gen)
		}
	}
	time.Sleep(time.Second)
	for _, m := range ms {
		m.stop()
	}
	stopPoll()
	<-polled
	a.AllowRebalance() // else Close waits for the rebalance the last poll blocked
	a.Close()
}

// runPartitionFlap: a and b stay in an eager (range) group on t while a
// third member comes and goes twice (c1, then c2). Range sorts members by
// id, so each arrival moves t[1] from a to b and t[2] from b to the
// newcomer, and each departure moves them back: t[1] goes a→b→a→b→a and
// t[2] b→c→b→c→b, returning to the owner before the previous one twice
// within minutes. Every arrival and departure is a rebalance: the group
// is in a rebalance loop too.
func runPartitionFlap(t *testing.T, _ *kfake.Cluster, addr string) {
	rng := kgo.Balancers(kgo.RangeBalancer())
	a := startDiagMember(t, addr, "g", "flap-a", []string{"t"}, rng)
	a.groupMeta(t)
	b := startDiagMember(t, addr, "g", "flap-b", []string{"t"}, rng)
	step := func(do func()) {
		_, gen := a.cl.GroupMetadata()
		do()
		waitGeneration(t, a, gen+1)
		time.Sleep(500 * time.Millisecond)
	}
	waitGeneration(t, a, 2)
	var c *diagMember
	step(func() { c = startDiagMember(t, addr, "g", "flap-c1", []string{"t"}, rng) })
	step(c.stop)
	step(func() { c = startDiagMember(t, addr, "g", "flap-c2", []string{"t"}, rng) })
	step(c.stop)
	step(b.stop)
	a.stop()
}

// unknownPartitions is an assignor that plans as range does but from
// metadata that lacks the last partition of each topic (a custom assignor
// with stale metadata): that partition is assigned to nobody.
type unknownPartitions struct{ kgo.GroupBalancer }

func (u unknownPartitions) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	b, topics, err := u.GroupBalancer.MemberBalancer(members)
	if err != nil {
		return nil, nil, err
	}
	inner, ok := b.(kgo.GroupMemberBalancerOrError) // kgo's own balancers are
	if !ok {
		return nil, nil, fmt.Errorf("%T balances without an error", b)
	}
	return lastUnknown{inner}, topics, nil
}

// lastUnknown balances as inner does with one partition fewer per topic.
type lastUnknown struct {
	inner kgo.GroupMemberBalancerOrError
}

func (l lastUnknown) BalanceOrError(topics map[string]int32) (kgo.IntoSyncAssignment, error) {
	fewer := map[string]int32{}
	for t, n := range topics {
		fewer[t] = max(n-1, 0)
	}
	return l.inner.BalanceOrError(fewer)
}

// Balance is never called: kgo calls BalanceOrError.
func (l lastUnknown) Balance(topics map[string]int32) kgo.IntoSyncAssignment {
	a, _ := l.BalanceOrError(topics)
	return a
}

// runPartitionUnowned: a, alone, leads with an assignor that leaves t[2]
// out of its plan, and consumes t[0] and t[1] for longer than
// UnownedAfter before it leaves.
func runPartitionUnowned(t *testing.T, _ *kfake.Cluster, addr string) {
	a := startDiagMember(t, addr, "g", "unowned-a", []string{"t"}, kgo.Balancers(unknownPartitions{kgo.RangeBalancer()}))
	a.groupMeta(t)
	time.Sleep(holdUnowned)
	a.stop()
}

// runMemberWithoutPartitions: two members of a range group on u, which
// has one partition: the second member (by id) waits with nothing for
// longer than UnownedAfter, then both leave.
func runMemberWithoutPartitions(t *testing.T, _ *kfake.Cluster, addr string) {
	rng := kgo.Balancers(kgo.RangeBalancer())
	a := startDiagMember(t, addr, "g", "idle-a", []string{"u"}, rng)
	a.groupMeta(t)
	b := startDiagMember(t, addr, "g", "idle-b", []string{"u"}, rng)
	waitGeneration(t, a, 2)
	b.groupMeta(t)
	time.Sleep(holdUnowned)
	b.stop()
	a.stop()
}
