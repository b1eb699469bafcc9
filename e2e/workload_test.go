//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The workload scenarios (26-29) run a workload once straight to the broker
// and once through kproxy, each on topics and groups of its own, check each
// run on its own, then require both to have the same outcome.

// leg is one run of a workload scenario.
type leg struct {
	name string  // "direct" or "kproxy"
	bs   string  // the address the clients are seeded with
	k    *kproxy // nil on the direct run (and with E2E_MODE=direct)
	w    *bypassWatch
}

// bothWays runs run as the subtest "direct", its clients seeded with the
// broker's address, then as "kproxy", seeded with a journaled kproxy's (with
// its admin server on proxyAdmin). It returns both outcomes, and ok when
// both runs passed.
func bothWays[R any](t *testing.T, run func(t *testing.T, l *leg) R) (direct, proxied R, ok bool) {
	t.Helper()
	okD := t.Run("direct", func(t *testing.T) {
		start := time.Now()
		direct = run(t, &leg{name: "direct", bs: brokerAddr})
		t.Logf("direct run: %s", time.Since(start).Round(100*time.Millisecond))
	})
	okP := t.Run("kproxy", func(t *testing.T) {
		start := time.Now()
		k := startKproxyWith(t, true, brokerAddr, "--admin", proxyAdmin)
		l := &leg{name: "kproxy", bs: bootstrap(k), k: k}
		if k != nil {
			l.w = watchBypass(t)
			// A failed run shows what kproxy counted, while it still runs.
			t.Cleanup(func() {
				if t.Failed() && !k.stopped {
					logCounters(t, "kproxy at the failure")
				}
			})
		}
		proxied = run(t, l)
		t.Logf("kproxy run: %s", time.Since(start).Round(100*time.Millisecond))
	})
	return direct, proxied, okD && okP
}

// client registers p, a client of the workload, to be watched for
// connections that bypass kproxy.
func (l *leg) client(p *proc) *proc {
	if l.w != nil {
		l.w.add(p)
	}
	return p
}

// check ends a run through kproxy: no client may have connected to the
// broker itself, and checkWorkloadProxy. The direct run has nothing to
// check.
func (l *leg) check(t *testing.T, groups ...string) {
	t.Helper()
	if l.k == nil {
		return
	}
	l.w.check(t)
	checkWorkloadProxy(t, l.k, groups...)
}

// workloadCounters are the kproxy counters a workload run logs; the first
// mustBeZero of them count harm to the clients' traffic and must stay at zero.
var workloadCounters = []string{
	"kproxy_rewrite_failures_total",
	"kproxy_correlation_mismatches_total",
	"kproxy_malformed_frames_total",
	"kproxy_short_frames_total",
	"kproxy_oversized_frames_total",
	"kproxy_nodes_refused_total",
	"kproxy_upstream_dial_failures_total",
	"kproxy_endpoints_dropped_total",
	"kproxy_truncated_frames_total",
	"kproxy_unobserved_frames_total",
	"kproxy_observer_drops_total",
	"kproxy_request_frames_total",
	"kproxy_response_frames_total",
}

const mustBeZero = 7

// logCounters logs workloadCounters from kproxy's /metrics, or why it could
// not read them, and returns them (nil then).
func logCounters(t *testing.T, what string) map[string]float64 {
	t.Helper()
	m, err := scrapeMetrics(proxyAdmin)
	if err != nil {
		t.Logf("%s: /metrics: %v", what, err)
		return nil
	}
	var b strings.Builder
	for _, name := range workloadCounters {
		fmt.Fprintf(&b, " %s=%v", name, m[name])
	}
	t.Logf("%s:%s", what, b.String())
	return m
}

// checkWorkloadProxy requires kproxy to have counted no rewrite failure, no
// correlation mismatch, and none of the other counters of harm
// (workloadCounters), stops it, requires its journal to replay to the
// report it wrote live, and that report to tell each of groups. A nil kproxy
// (E2E_MODE=direct) has nothing to check.
func checkWorkloadProxy(t *testing.T, k *kproxy, groups ...string) *report {
	t.Helper()
	if k == nil {
		return nil
	}
	m := logCounters(t, "kproxy counted")
	if m == nil {
		t.Fatal("kproxy's /metrics does not answer")
	}
	for _, name := range workloadCounters[:mustBeZero] {
		if m[name] != 0 {
			t.Errorf("%s = %v; want 0 (kproxy log: %s)", name, m[name], filepath.Join(runDir(t), "kproxy.err"))
		}
	}
	r := k.finish()
	if r == nil {
		return nil
	}
	for _, g := range groups {
		r.group(t, g)
	}
	return r
}

// rec is a record as a workload or the broker tells it.
type rec struct {
	Offset int64
	Key    string
	Value  string
}

func (r rec) String() string { return fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, r.Value) }

// byPartition is a topic's records by partition, in offset order.
type byPartition map[int32][]rec

// count is the number of records.
func (b byPartition) count() int {
	n := 0
	for _, rs := range b {
		n += len(rs)
	}
	return n
}

// values drops the offsets: what two runs of a workload must agree on.
func (b byPartition) values() map[int32][]string {
	out := map[int32][]string{}
	for p, rs := range b {
		for _, r := range rs {
			out[p] = append(out[p], r.Key+"="+r.Value)
		}
	}
	return out
}

// recordEvents collects the "record" events of the given processes by
// partition, in the order printed.
func recordEvents(ps ...*proc) byPartition {
	out := byPartition{}
	for _, p := range ps {
		for _, e := range p.snapshot() {
			if e.Name == "record" {
				out[e.Partition] = append(out[e.Partition], rec{e.Offset, e.Key, e.Value})
			}
		}
	}
	return out
}

// diffPartitions describes how got differs from want, partition by
// partition ("" when equal), naming the first record that differs.
func diffPartitions(got, want map[int32][]string) string {
	var b strings.Builder
	ps := slices.Sorted(maps.Keys(want))
	for p := range got {
		if _, ok := want[p]; !ok {
			ps = append(ps, p)
		}
	}
	for _, p := range ps {
		g, w := got[p], want[p]
		if slices.Equal(g, w) {
			continue
		}
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		at := func(s []string) string {
			if i < len(s) {
				return s[i]
			}
			return "(end)"
		}
		fmt.Fprintf(&b, "  partition %d: %d records, want %d; first difference at #%d: %s, want %s\n", p, len(g), len(w), i, at(g), at(w))
	}
	return b.String()
}

// readBack reads every partition of topic from the broker itself (never
// kproxy), from its start up to its end at the time of the call, read
// committed or not. Transaction markers are read too (and dropped), so that
// the end is known to be reached even when it is a marker.
func readBack(t *testing.T, topic string, committed bool) byPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ends, err := admin(t).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	end, reached := map[int32]int64{}, map[int32]int64{}
	starts := map[int32]kgo.Offset{}
	for p, o := range ends[topic] {
		end[p] = o.Offset
		starts[p] = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokerAddr), kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts})}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := byPartition{}
	done := func() bool {
		for p, e := range end {
			if reached[p] < e {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s back from the broker: reached %v of %v", topic, reached, end)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("reading %s/%d back from the broker: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			reached[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], rec{r.Offset, string(r.Key), string(r.Value)})
			}
		})
	}
	return out
}

// produceDirect writes records to the broker itself (never kproxy), key
// and value from kv(i) for i in [0, n), each partitioned by its key as the
// Java client would, and waits until all are acknowledged.
func produceDirect(t *testing.T, topic string, n int, kv func(i int) (string, string)) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokerAddr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		k, v := kv(i)
		rs[i] = &kgo.Record{Key: []byte(k), Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
}

// deleteTopics deletes topics that may be left from an earlier run on the
// same broker (a Streams application's internal topics).
func deleteTopics(t *testing.T, topics ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := admin(t).DeleteTopics(ctx, topics...)
	if err != nil {
		t.Fatalf("delete %v: %v", topics, err)
	}
	for _, r := range res {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("delete %s: %v", r.Topic, r.Err)
		}
	}
}

// setGroupConfig sets a group's dynamic config on the broker itself, as an
// operator would (kafka-configs --entity-type groups).
func setGroupConfig(t *testing.T, group, name, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokerAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = name, kmsg.StringPtr(value), kmsg.IncrementalAlterConfigOpSet
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && len(resp.Resources) == 1 {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("set %s=%s on group %s: %v", name, value, group, err)
	}
}

// failOnExit fails the test when one of ps exited, or printed an "error"
// event, showing its end.
func failOnExit(t *testing.T, ps ...*proc) {
	t.Helper()
	for _, p := range ps {
		if p.waitExit(0) || p.has("error") {
			t.Fatalf("%s failed\n%s", p.name, p.tail())
		}
	}
}

// bypassWatch samples, every 100 ms, the TCP connections of the clients
// of a run through kproxy, and keeps those to the broker's port: a client
// that learned the broker's address (from a response kproxy did not rewrite)
// and went around kproxy.
type bypassWatch struct {
	port string // the broker's port, as /proc/net/tcp writes it (hex)
	mu   sync.Mutex
	ps   []*proc
	seen map[string]bool
	stop chan struct{}
	done chan struct{}
}

func watchBypass(t *testing.T) *bypassWatch {
	t.Helper()
	_, port, err := net.SplitHostPort(brokerAddr)
	n, err2 := strconv.Atoi(port)
	if err != nil || err2 != nil {
		t.Fatalf("broker address %s: %v %v", brokerAddr, err, err2)
	}
	w := &bypassWatch{port: fmt.Sprintf("%04X", n), seen: map[string]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			w.sample()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(w.end)
	return w
}

func (w *bypassWatch) add(p *proc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ps = append(w.ps, p)
}

func (w *bypassWatch) end() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// sample records each watched client's established connections to the
// broker's port.
func (w *bypassWatch) sample() {
	w.mu.Lock()
	ps := slices.Clone(w.ps)
	w.mu.Unlock()
	// The socket inodes of connections to the broker's port.
	toBroker := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			// rem_address is HEXIP:HEXPORT; st 01 is ESTABLISHED.
			if len(fs) < 10 || fs[3] != "01" || !strings.HasSuffix(fs[2], ":"+w.port) {
				continue
			}
			toBroker[fs[9]] = true
		}
	}
	if len(toBroker) == 0 {
		return
	}
	for _, p := range ps {
		if p.waitExit(0) || p.cmd.Process == nil {
			continue
		}
		fd := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
		ents, err := os.ReadDir(fd)
		if err != nil {
			continue
		}
		for _, e := range ents {
			link, err := os.Readlink(filepath.Join(fd, e.Name()))
			inode, ok := strings.CutPrefix(link, "socket:[")
			if err != nil || !ok {
				continue
			}
			if _, ok := toBroker[strings.TrimSuffix(inode, "]")]; ok {
				w.mu.Lock()
				w.seen[p.name] = true
				w.mu.Unlock()
			}
		}
	}
}

// check stops the watch and fails the test for every client seen connected
// to the broker itself.
func (w *bypassWatch) check(t *testing.T) {
	t.Helper()
	w.end()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range slices.Sorted(maps.Keys(w.seen)) {
		t.Errorf("%s connected to the broker (%s) itself, around kproxy", c, brokerAddr)
	}
}
