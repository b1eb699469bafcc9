//go:build e2e

package e2e

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// raiseFDLimit raises this process's soft limit on open files to its hard
// limit, and returns the new limit: the flood's connections are the test's
// file descriptors too.
func raiseFDLimit(t *testing.T) uint64 {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatalf("raise the open files limit to %d: %v", lim.Max, err)
		}
	}
	return lim.Cur
}

// idleFlood is connections that send nothing, held until release.
type idleFlood struct {
	mu      sync.Mutex
	held    []net.Conn
	refused atomic.Int64
	failed  atomic.Int64
	lastErr atomic.Value
}

// floodSource is the flood's source address: not 127.0.0.1, so that its
// thousands of ephemeral ports cannot be the port another listener on
// 127.0.0.1 (a broker, another kproxy) wants to bind meanwhile.
var floodSource = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

// open opens n connections to addr from floodSource, workers dialing at
// once. A connection kproxy refuses (reset at once, sometimes before
// connect returns) is closed and counted; the others are held.
func (f *idleFlood) open(addr string, n, workers int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: floodSource}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1)
			for next.Add(1) <= int64(n) {
				c, err := d.Dial("tcp", addr)
				if errors.Is(err, syscall.ECONNRESET) {
					f.refused.Add(1)
					continue
				}
				if err != nil {
					f.failed.Add(1)
					f.lastErr.Store(err)
					continue
				}
				// Refused connections are reset at once; an accepted one
				// gets nothing.
				c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
				if _, err := c.Read(buf); err != nil {
					var ne net.Error
					if !errors.As(err, &ne) || !ne.Timeout() {
						f.refused.Add(1)
						c.Close()
						continue
					}
				}
				f.mu.Lock()
				f.held = append(f.held, c)
				f.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func (f *idleFlood) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.held {
		c.Close()
	}
	f.held = nil
}

// TestScenario13 is issue 15's 20,000 idle connections, against kproxy run
// with its open-files limit lowered to 4,096 (prlimit), beside a canary
// franz-go producer that connected first. kproxy must keep its file
// descriptors (no failed accept: it refuses past --max-connections, by
// default (4,096-256)/2), keep its admin server answering under the flood,
// stay up, and the canary must lose nothing. The figures (connections
// held and refused, time to open them, the canary's latency) are reported.
func TestScenario13(t *testing.T) {
	if mode == "direct" {
		t.Skip("E2E_MODE=direct: the flood is against kproxy")
	}
	const (
		topic, canaryN = "flood-canary", 300
		flood, nofile  = 20000, 4096
	)
	limit := raiseFDLimit(t)
	t.Logf("test process open files limit %d", limit)
	freshTopic(t, topic, 1, "")
	k := startKproxyWrapped(t, []string{"prlimit", "--nofile=" + itoa(nofile) + ":" + itoa(nofile), "--"},
		false, brokerAddr, "--admin", proxyAdmin)
	bs := bootstrap(k)
	// The broker's first writes to a fresh topic are slow: not the
	// canary's latency to report.
	feed(t, bs, topic, 20)
	canary := franzGo(t, "canary", "produce", "-bootstrap", bs, "-topic", topic, "-count", itoa(canaryN), "-every", "20ms")
	canary.waitFor(0, 30*time.Second, "started", func(e event) bool { return e.Name == "started" })
	time.Sleep(time.Second) // its connections made

	f := &idleFlood{}
	defer f.release()
	start := time.Now()
	f.open(bs, flood, 32)
	took := time.Since(start)
	code, body, herr := healthz(proxyAdmin)
	m := scrape(t, proxyAdmin)
	f.mu.Lock()
	held := len(f.held)
	f.mu.Unlock()
	t.Logf("flood: %d connections in %v: %d held open by kproxy, %d refused (reset), %d dials failed; kproxy counted %v refused, %v failed accepts, %v open",
		flood, took.Round(10*time.Millisecond), held, f.refused.Load(), f.failed.Load(),
		m["kproxy_connections_refused_total"], m["kproxy_accept_errors_total"], m["kproxy_connections_open"])
	if err, _ := f.lastErr.Load().(error); err != nil {
		t.Logf("last dial error: %v", err)
	}
	if herr != nil || code != 200 {
		t.Errorf("kproxy /healthz under the flood: %d %q %v; want 200", code, body, herr)
	}
	if m["kproxy_accept_errors_total"] != 0 {
		t.Errorf("kproxy_accept_errors_total = %v; want 0 (its file descriptors ran out)", m["kproxy_accept_errors_total"])
	}
	if m["kproxy_connections_refused_total"] == 0 {
		t.Errorf("kproxy refused no connection of %d against a %d file limit", flood, nofile)
	}
	if k.proc.waitExit(0) {
		t.Fatalf("kproxy exited under the flood\n%s", k.proc.tail())
	}

	canary.waitDone(2 * time.Minute)
	ev := canary.waitFor(0, 0, "produced", func(e event) bool { return e.Name == "produced" })
	t.Logf("canary: %d sent, %d failed, p50 %.1f ms, p99 %.1f ms, max %.1f ms", ev.Count, ev.Failed, ev.P50ms, ev.P99ms, ev.MaxMs)
	if ev.Failed != 0 {
		t.Errorf("canary: %d records failed under the flood: %s", ev.Failed, ev.Error)
	}
	// Once the flood leaves, new clients are served again.
	f.release()
	feed(t, bs, topic, 10)
	k.stop()
}
