package proxy

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
)

// fakeCluster is a kfake cluster whose listeners record the remote address
// of every connection they accept.
type fakeCluster struct {
	*kfake.Cluster
	mu      sync.Mutex
	remotes []string
}

// accepted returns the remote addresses of every connection accepted so far.
func (f *fakeCluster) accepted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.remotes...)
}

type recordingListener struct {
	net.Listener
	f *fakeCluster
}

func (l recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.f.mu.Lock()
		l.f.remotes = append(l.f.remotes, c.RemoteAddr().String())
		l.f.mu.Unlock()
	}
	return c, err
}

// startKfake starts a kfake cluster of n brokers on 127.0.0.1 that records
// accepted connections, and closes it when the test ends.
func startKfake(t *testing.T, n int, opts ...kfake.Opt) *fakeCluster {
	t.Helper()
	f := &fakeCluster{}
	opts = append([]kfake.Opt{
		kfake.NumBrokers(n),
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil {
				return nil, err
			}
			return recordingListener{ln, f}, nil
		}),
	}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	f.Cluster = c
	t.Cleanup(c.Close)
	return f
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

// startProxy runs a proxy until the test ends. A nil log logs warnings and
// errors to the test log.
func startProxy(t testing.TB, cfg Config, log *zap.Logger, observers ...Observer) *Proxy {
	t.Helper()
	p := newProxy(t, cfg, log, observers...)
	runProxy(t, p)
	return p
}

// newProxy creates a proxy without running it, for tests that adjust it
// first.
func newProxy(t testing.TB, cfg Config, log *zap.Logger, observers ...Observer) *Proxy {
	t.Helper()
	if log == nil {
		log = zaptest.NewLogger(t, zaptest.Level(zapcore.WarnLevel))
	}
	p, err := New(cfg, log, observers...)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	return p
}

// runProxy runs p until the test ends.
func runProxy(t testing.TB, p *Proxy) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
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

// recorder is an Observer that keeps everything it sees.
type recorder struct {
	mu        sync.Mutex
	exchanges []*decode.Exchange
	events    []decode.Event
}

var _ Observer = (*recorder)(nil)

func (r *recorder) Observe(x *decode.Exchange, events []decode.Event) {
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
// waiting on asynchronous effects (the dispatcher), never for speed.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
