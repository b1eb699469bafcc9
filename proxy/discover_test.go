package proxy

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// freePort returns a loopback port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// produceVia produces and consumes one record with a client seeded only
// with seed, dialing from 127.0.0.2.
func produceVia(t *testing.T, seed, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), dialFrom("127.0.0.2"), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after restart")}).FirstErr(); err != nil {
		t.Fatalf("produce through %s: %v", seed, err)
	}
	fs := cl.PollRecords(ctx, 1)
	if err := fs.Err0(); err != nil {
		t.Fatalf("consume through %s: %v", seed, err)
	}
	if rs := fs.Records(); len(rs) != 1 || string(rs[0].Value) != "after restart" {
		t.Fatalf("consumed %v; want the record produced", rs)
	}
}

// TestDiscoveryAtStartup: a client that kept a node listener's address
// (as after a kproxy restart) and never bootstraps through kproxy works as
// soon as Run has discovered the brokers, which it does by itself, before
// any client connects: every connection the client makes is to a node
// listener. (It waits for discovery only so that the client's first dial
// is not refused: kgo then waits 5 s before asking for metadata again.)
func TestDiscoveryAtStartup(t *testing.T) {
	const topic = "discovered"
	cluster := startKfake(t, 3, kfake.SeedTopics(3, topic))
	cfg := testConfig(cluster.ListenAddrs()...)
	for id := range int32(3) {
		cfg.BrokerListeners[id] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	}
	rec := &recorder{}
	log, logs := observedLogger()
	p := startProxy(t, cfg, log, rec)
	waitFor(t, 10*time.Second, "discovery", func() bool {
		return logs.FilterMessageSnippet("broker nodes discovered").Len() == 1
	})
	if n := p.Stats().ConnectionsTotal; n != 0 {
		t.Fatalf("%d client connections before the client started; want 0", n)
	}
	if n := logs.FilterMessageSnippet("listening for broker node").Len(); n != 3 {
		t.Errorf("%d node listeners opened by discovery; want 3", n)
	}
	produceVia(t, cfg.BrokerListeners[1], topic)

	xs, _ := rec.snapshot()
	if len(xs) == 0 {
		t.Fatal("no exchange observed")
	}
	for _, x := range xs {
		if x.BrokerID < 0 {
			t.Fatalf("%s exchange on the bootstrap listener; the client was seeded with a node listener only", kmsg.NameForKey(x.APIKey))
		}
	}
	for _, remote := range cluster.Accepted() {
		if host, _, _ := net.SplitHostPort(remote); host == "127.0.0.2" {
			t.Errorf("kfake accepted a connection from %s: the client bypassed kproxy", remote)
		}
	}
	if st := p.Stats(); st.ConnectionsTotal == 0 || st.UpstreamDialFailures != 0 {
		t.Errorf("stats %+v: want connections and no dial failures", st)
	}
}

// TestDiscoveryRetries: with the broker down at startup, discovery fails,
// says so, and does not stop the proxy; once the broker is up it succeeds
// without any client's help and the node listener serves.
func TestDiscoveryRetries(t *testing.T) {
	const topic = "late"
	port := freePort(t)
	cfg := testConfig(fmt.Sprintf("127.0.0.1:%d", port))
	cfg.BrokerListeners[0] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	log, logs := observedLogger()
	startProxy(t, cfg, log)
	waitFor(t, 10*time.Second, "the discovery failure log line", func() bool {
		return logs.FilterMessageSnippet("broker discovery failed").Len() > 0
	})
	if n := logs.FilterMessageSnippet("listening for broker node").Len(); n != 0 {
		t.Fatalf("%d node listeners open with the broker down; want 0", n)
	}

	startKfake(t, 1, kfake.Ports(port), kfake.SeedTopics(1, topic))
	waitFor(t, 10*time.Second, "discovery to succeed", func() bool {
		return logs.FilterMessageSnippet("broker nodes discovered").Len() == 1
	})
	produceVia(t, cfg.BrokerListeners[0], topic)
}

func TestMetadataVersion(t *testing.T) {
	key := func(k, min, max int16) kmsg.ApiVersionsResponseApiKey {
		return kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: min, MaxVersion: max}
	}
	for _, tc := range []struct {
		name   string
		keys   []kmsg.ApiVersionsResponseApiKey
		want   int16
		wantOK bool
	}{
		{"broker below kmsg", []kmsg.ApiVersionsResponseApiKey{key(0, 0, 9), key(3, 0, 7)}, 7, true},
		{"broker above kmsg", []kmsg.ApiVersionsResponseApiKey{key(3, 4, 12)}, 12, true},
		{"broker far above kmsg", []kmsg.ApiVersionsResponseApiKey{key(3, 4, 99)}, 20, true},
		{"minimum above kmsg", []kmsg.ApiVersionsResponseApiKey{key(3, 21, 99)}, 0, false},
		{"no metadata", []kmsg.ApiVersionsResponseApiKey{key(18, 0, 4)}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.ApiKeys = tc.keys
			v, ok := metadataVersion(resp, 20)
			if ok != tc.wantOK || (ok && v != tc.want) {
				t.Errorf("metadataVersion = %d, %v; want %d, %v", v, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestDiscoveryStopsOnSASL: a broker that wants SASL before Metadata
// closes discovery's connection; discovery says why and does not retry.
// (TestSASLForwardedNeverObserved shows that clients, which authenticate,
// still work through kproxy.)
func TestDiscoveryStopsOnSASL(t *testing.T) {
	cluster := startKfake(t, 1, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "secret"))
	log, logs := observedLogger()
	p := newProxy(t, testConfig(cluster.ListenAddrs()...), log)
	dials := make(chan struct{}, 16)
	real := p.dial
	p.dial = func(ctx context.Context, addr string) (net.Conn, error) {
		dials <- struct{}{}
		return real(ctx, addr)
	}
	runProxy(t, p)
	waitFor(t, 10*time.Second, "discovery to stop", func() bool {
		return logs.FilterMessageSnippet("broker discovery stopped").Len() == 1
	})
	if n := logs.FilterMessageSnippet("broker discovery failed").Len(); n != 0 {
		t.Errorf("%d retry log lines; want none", n)
	}
	if n := len(dials); n != 1 {
		t.Errorf("discovery dialed %d times; want 1", n)
	}
}
