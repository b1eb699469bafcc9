//go:build e2e

package e2e

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzCorpus reads the corpus of FuzzProxyFraming (proxy/testdata/fuzz):
// each file is "go test fuzz v1" and one []byte("...") literal.
func fuzzCorpus(t *testing.T) [][]byte {
	t.Helper()
	dir := filepath.Join(e2eDir, "..", "proxy", "testdata", "fuzz", "FuzzProxyFraming")
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the FuzzProxyFraming corpus: %v", err)
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lit := strings.TrimSpace(strings.TrimPrefix(string(b), "go test fuzz v1"))
		lit = strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")")
		in, err := strconv.Unquote(lit)
		if err != nil {
			t.Fatalf("corpus file %s: %v", f.Name(), err)
		}
		out = append(out, []byte(in))
	}
	if len(out) == 0 {
		t.Fatalf("no corpus in %s", dir)
	}
	return out
}

// fuzzKeys are the APIs the generated frames start from: what clients send,
// and nothing that changes the cluster (no CreateTopics, DeleteTopics,
// AlterConfigs...), so that a mutation cannot turn into an admin action
// with sensible arguments. Mutations may still change the key.
var fuzzKeys = []int16{0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 22, 32, 36, 60, 68, 69}

// fuzzFrame is one generated input: a request of a key from fuzzKeys at a
// random version, its fields at their defaults, then mutated.
func fuzzFrame(rng *rand.Rand, corpus [][]byte) []byte {
	var in []byte
	if rng.IntN(4) == 0 {
		in = append([]byte(nil), corpus[rng.IntN(len(corpus))]...)
	} else {
		req := kmsg.RequestForKey(fuzzKeys[rng.IntN(len(fuzzKeys))])
		req.SetVersion(int16(rng.IntN(int(req.MaxVersion()) + 1)))
		in = kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, req, rng.Int32())
	}
	for range rng.IntN(4) {
		switch rng.IntN(7) {
		case 0: // flip bytes after the size
			if len(in) > 4 {
				for range 1 + rng.IntN(4) {
					in[4+rng.IntN(len(in)-4)] ^= byte(1 + rng.IntN(255))
				}
			}
		case 1: // cut short
			in = in[:rng.IntN(len(in)+1)]
		case 2: // garbage after
			tail := make([]byte, rng.IntN(64))
			for i := range tail {
				tail[i] = byte(rng.Uint32())
			}
			in = append(in, tail...)
		case 3: // a size that lies, small or absurd
			if len(in) >= 4 {
				sizes := []uint32{0, 1, 4, 7, 8, 12, uint32(len(in) - 4 + rng.IntN(9) - 4), 1 << 20, 0x7fffffff, 0xffffffff}
				binary.BigEndian.PutUint32(in, sizes[rng.IntN(len(sizes))])
			}
		case 4: // another frame after
			in = append(in, corpus[rng.IntN(len(corpus))]...)
		case 5: // another API key or version
			if len(in) >= 8 {
				binary.BigEndian.PutUint16(in[4+2*rng.IntN(2):], uint16(rng.IntN(80)))
			}
		case 6: // noise only
			in = make([]byte, rng.IntN(200))
			for i := range in {
				in[i] = byte(rng.Uint32())
			}
		}
	}
	return in
}

// fuzzOutcome is how kproxy ended one fuzzed connection.
type fuzzOutcome struct {
	sent, closed, held, answered atomic.Int64
}

// send writes in on a new connection to addr, closes its writing side and
// reads until kproxy closes the connection or hold passes.
func (o *fuzzOutcome) send(addr string, in []byte, hold time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	o.sent.Add(1)
	c.Write(in) // kproxy may have closed already: fine
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(hold))
	n, err := io.Copy(io.Discard, c)
	if n > 0 {
		o.answered.Add(1)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// A request the broker holds (a Fetch waiting for data, say)
		// keeps the connection open: the client leaves instead.
		o.held.Add(1)
		return nil
	}
	o.closed.Add(1)
	return nil
}

// TestScenario12 sends the proxy framing fuzz to the real broker: the
// FuzzProxyFraming corpus and frames generated from real requests by
// mutation (a fixed seed, up to 8,000 inputs or 15 s, eight at a time),
// each on its own connection through kproxy, while a canary franz-go
// producer sends through kproxy too. kproxy must stay up and not panic, the
// canary must see no error, and the broker must stay up. kproxy's memory
// (RSS, and the Go heap from /metrics) is logged at the start, every
// minute and at the end. E2E_FUZZ_DURATION (a Go duration, 10m for the
// curve in docs/benchmarks.md) runs it that long instead, with no cap on
// the inputs.
func TestScenario12(t *testing.T) {
	if mode == "direct" {
		t.Skip("E2E_MODE=direct: the fuzz is against kproxy")
	}
	const (
		topic   = "fuzz-canary"
		workers = 8
		every   = 40 * time.Millisecond // the canary's pace
	)
	maxInputs, budget := 8000, 15*time.Second
	if s := os.Getenv("E2E_FUZZ_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("E2E_FUZZ_DURATION=%q: want a positive Go duration such as 10m", s)
		}
		maxInputs, budget = math.MaxInt, d
	}
	canaryN := max(400, int(budget/every))
	corpus := fuzzCorpus(t)
	freshTopic(t, topic, 1, "")
	k := startKproxyWith(t, false, brokerAddr, "--admin", proxyAdmin)
	bs := bootstrap(k)
	// The broker's first writes to a fresh topic are slow: not the
	// canary's latency to report.
	feed(t, bs, topic, 20)
	canary := franzGo(t, "canary", "produce", "-bootstrap", bs, "-topic", topic, "-count", itoa(canaryN), "-every", every.String())
	canary.waitFor(0, 30*time.Second, "started", func(e event) bool { return e.Name == "started" })

	inputs := make(chan []byte)
	go func() {
		defer close(inputs)
		rng := rand.New(rand.NewPCG(12, 15))
		end := time.Now().Add(budget)
		for i := 0; i < maxInputs && time.Now().Before(end); i++ {
			if i < len(corpus) {
				inputs <- corpus[i]
				continue
			}
			inputs <- fuzzFrame(rng, corpus)
		}
	}()
	var (
		o       fuzzOutcome
		wg      sync.WaitGroup
		errMu   sync.Mutex
		dialErr error
	)
	start := time.Now()
	mem := sampleMemory(t, k.proc.cmd.Process.Pid, &o.sent)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for in := range inputs {
				if err := o.send(bs, in, 3*time.Second); err != nil {
					errMu.Lock()
					dialErr = err
					errMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	mem.stop()
	t.Logf("fuzz: %d inputs in %v (%d from the corpus): %d closed by kproxy, %d held open by a request the broker kept, %d answered with some bytes",
		o.sent.Load(), time.Since(start).Round(100*time.Millisecond), len(corpus), o.closed.Load(), o.held.Load(), o.answered.Load())
	if dialErr != nil {
		t.Errorf("kproxy refused a connection during the fuzz: %v", dialErr)
	}

	canary.waitDone(2*time.Minute + budget)
	ev := canary.waitFor(0, 0, "produced", func(e event) bool { return e.Name == "produced" })
	t.Logf("canary: %d sent, %d failed, p50 %.1f ms, p99 %.1f ms, max %.1f ms", ev.Count, ev.Failed, ev.P50ms, ev.P99ms, ev.MaxMs)
	if ev.Failed != 0 {
		t.Errorf("canary: %d records failed during the fuzz: %s", ev.Failed, ev.Error)
	}
	if k.proc.waitExit(0) {
		t.Fatalf("kproxy exited during the fuzz\n%s", k.proc.tail())
	}
	if code, body, err := healthz(proxyAdmin); err != nil || code != 200 {
		t.Errorf("kproxy /healthz after the fuzz: %d %q %v; want 200", code, body, err)
	}
	m := scrape(t, proxyAdmin)
	t.Logf("kproxy counted: %v request frames forwarded; %v truncated, %v short, %v oversized frames; %v correlation mismatches",
		m["kproxy_request_frames_total"], m["kproxy_truncated_frames_total"], m["kproxy_short_frames_total"], m["kproxy_oversized_frames_total"], m["kproxy_correlation_mismatches_total"])
	if err := pingBroker(); err != nil {
		t.Errorf("the broker does not answer after the fuzz: %v", err)
	}
	k.stop()
	if log, err := os.ReadFile(filepath.Join(runDir(t), "kproxy.err")); err == nil && bytes.Contains(log, []byte("panic")) {
		t.Errorf("kproxy's log mentions a panic: %s", filepath.Join(runDir(t), "kproxy.err"))
	}
}

// memorySampler logs kproxy's memory while the fuzz runs.
type memorySampler struct {
	done    chan struct{}
	stopped sync.WaitGroup
}

// sampleMemory logs kproxy's memory (process pid) with the inputs sent so
// far: now, every minute, and when stopped. RSS splits into anonymous
// memory (the Go heap, stacks, the runtime's) and file pages (the
// binary's code and data, read in as the fuzz reaches more of it; from
// /proc); heap in use, allocated and live, goroutines and open
// connections come from kproxy's /metrics. Heap allocated counts garbage
// not yet collected, so it swings with the moment of the sample; the live
// heap (what the last collection found live) is what shows memory kept.
func sampleMemory(t *testing.T, pid int, sent *atomic.Int64) *memorySampler {
	start := time.Now()
	sample := func() {
		m, err := scrapeMetrics(proxyAdmin)
		if err != nil {
			t.Logf("memory at %v: /metrics: %v", time.Since(start).Round(time.Second), err)
			return
		}
		st := procStatusKB(pid)
		t.Logf("memory at %4.1f min, %7d inputs: RSS %.1f MiB (anonymous %.1f, file %.1f), heap in use %.1f MiB, heap allocated %.1f MiB, heap live %.1f MiB, %v goroutines, %v connections open",
			time.Since(start).Minutes(), sent.Load(), m["process_resident_memory_bytes"]/(1<<20), st["RssAnon"]/1024, st["RssFile"]/1024,
			m["go_memstats_heap_inuse_bytes"]/(1<<20), m["go_memstats_heap_alloc_bytes"]/(1<<20), m["go_gc_heap_live_bytes"]/(1<<20),
			m["go_goroutines"], m["kproxy_connections_open"])
	}
	s := &memorySampler{done: make(chan struct{})}
	s.stopped.Add(1)
	go func() {
		defer s.stopped.Done()
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		sample()
		for {
			select {
			case <-tick.C:
				sample()
			case <-s.done:
				sample()
				return
			}
		}
	}()
	return s
}

// stop takes the last sample.
func (s *memorySampler) stop() {
	close(s.done)
	s.stopped.Wait()
}

// procStatusKB is the "kB" fields of /proc/PID/status by name (RssAnon,
// RssFile, ...), empty when it cannot be read.
func procStatusKB(pid int) map[string]float64 {
	out := map[string]float64{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if kb, isKB := strings.CutSuffix(strings.TrimSpace(v), " kB"); ok && isKB {
			if f, err := strconv.ParseFloat(kb, 64); err == nil {
				out[name] = f
			}
		}
	}
	return out
}
