package proxy

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/testkafka"
	"github.com/kproxy-dev/kproxy/pipeline"
)

// fakeCluster is a kfake cluster whose listeners record the remote address
// of every connection they accept.
type fakeCluster = testkafka.Recording

// startKfake starts a kfake cluster of n brokers on 127.0.0.1 that records
// accepted connections, and closes it when the test ends.
func startKfake(t *testing.T, n int, opts ...kfake.Opt) *fakeCluster {
	t.Helper()
	return testkafka.StartRecording(t, append([]kfake.Opt{kfake.NumBrokers(n)}, opts...)...)
}

// testConfig is a proxy configuration for tests: everything on 127.0.0.1,
// node listeners on free ports for node ids 0-4.
func testConfig(upstreams ...string) Config {
	listeners := make(map[int32]string)
	for id := int32(0); id < 5; id++ {
		listeners[id] = "127.0.0.1:0"
	}
	return Config{
		Listen:          "127.0.0.1:0",
		Upstreams:       upstreams,
		BrokerListeners: listeners,
		DialTimeout:     2 * time.Second,
		ShutdownTimeout: 2 * time.Second,
	}
}

// fakeConfig is testConfig for an upstream that only speaks Kafka framing
// (the fake brokers of these tests): broker discovery is off, as it would
// send ApiVersions and Metadata requests such an upstream cannot answer.
func fakeConfig(upstream string) Config {
	cfg := testConfig(upstream)
	cfg.DisableBrokerDiscovery = true
	return cfg
}

// startProxy runs a proxy, and a pipeline reading its queue, until the
// test ends (see runProxy). A nil log logs warnings and errors to the test
// log.
func startProxy(t testing.TB, cfg Config, log *zap.Logger, recs ...*recorder) *Proxy {
	t.Helper()
	p := newProxy(t, cfg, log)
	runProxy(t, p, recs...)
	return p
}

// newProxy creates a proxy without running it, for tests that adjust it
// first.
func newProxy(t testing.TB, cfg Config, log *zap.Logger) *Proxy {
	t.Helper()
	if log == nil {
		log = zaptest.NewLogger(t, zaptest.Level(zapcore.WarnLevel))
	}
	p, err := New(cfg, log)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	return p
}

// runProxy runs p, and a pipeline reading its queue (as serve does), until
// the test ends. The pipeline logs to p's log and shows each exchange, with
// its events, to recs.
func runProxy(t testing.TB, p *Proxy, recs ...*recorder) *pipeline.Pipeline {
	t.Helper()
	cfg := pipeline.Config{Log: p.log}
	if len(recs) > 0 {
		cfg.Inspect = func(x *decode.Exchange, events []decode.Event, _ error) {
			for _, r := range recs {
				r.record(x, events)
			}
		}
	}
	return runPiped(t, p, cfg)
}

// runPiped runs p, and a pipeline with cfg reading its queue, until the
// test ends.
func runPiped(t testing.TB, p *Proxy, cfg pipeline.Config) *pipeline.Pipeline {
	t.Helper()
	pl := pipeline.New(cfg)
	piped := make(chan error, 1)
	go func() { piped <- pl.Run(context.Background(), p.Queue()) }() // ends with the queue, once Run has returned
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := <-piped; err != nil {
			t.Errorf("pipeline: %v", err)
		}
	})
	return pl
}

// observedLogger returns a logger whose entries at Info and above can be
// inspected.
func observedLogger() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.InfoLevel)
	return zap.New(core), logs
}

// dialFrom returns a kgo dialer whose connections come from ip.
func dialFrom(ip string) kgo.Opt {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return kgo.Dialer(d.DialContext)
}

// recorder keeps every exchange the pipeline reads, with its events.
type recorder struct {
	mu        sync.Mutex
	exchanges []*decode.Exchange
	events    []decode.Event
}

// record keeps x (the proxy's queue never reuses an exchange) and copies
// of its events.
func (r *recorder) record(x *decode.Exchange, events []decode.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exchanges = append(r.exchanges, x)
	r.events = append(r.events, events...)
}

// snapshot returns copies of what was recorded.
func (r *recorder) snapshot() ([]*decode.Exchange, []decode.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*decode.Exchange(nil), r.exchanges...), append([]decode.Event(nil), r.events...)
}

// waitFor polls cond until it holds or the timeout passes. It is for
// waiting on asynchronous effects (the pipeline), never for speed.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkafka.WaitFor(t, timeout, what, cond)
}
