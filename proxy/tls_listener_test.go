package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// produceConsume produces n records to topic through seed and consumes
// them back, within timeout, with a client made of opts.
func produceConsume(t *testing.T, timeout time.Duration, seed, topic string, n int, opts ...kgo.Opt) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return produceConsumeCtx(ctx, seed, topic, n, opts...)
}

// produceConsumeCtx is produceConsume until ctx is done.
func produceConsumeCtx(ctx context.Context, seed, topic string, n int, opts ...kgo.Opt) error {
	opts = append(opts, kgo.SeedBrokers(seed), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequestRetries(2), kgo.RetryTimeout(5*time.Second))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var batch []*kgo.Record
	for i := range n {
		batch = append(batch, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: recordValue(i)})
	}
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consumed %d of %d records: %w", got, n, err)
		}
		if err := fs.Err(); err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		got += fs.NumRecords()
	}
	return nil
}

// apiVersionsRoundTrip sends an ApiVersions v0 request on nc and reads its
// response.
func apiVersionsRoundTrip(nc net.Conn, corr int32) error {
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	defer nc.SetDeadline(time.Time{})
	req := kmsg.NewPtrApiVersionsRequest()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, corr)
	if _, err := nc.Write(frame); err != nil {
		return err
	}
	resp, err := readTestFrame(nc)
	if err != nil {
		return err
	}
	if got := int32(uint32(resp[4])<<24 | uint32(resp[5])<<16 | uint32(resp[6])<<8 | uint32(resp[7])); got != corr {
		return fmt.Errorf("correlation id %d; want %d", got, corr)
	}
	return nil
}

// TestListenerTLS: with listener TLS, a TLS client produces and consumes
// through the bootstrap listener and the node listeners (all TLS), and a
// client that does not trust kproxy's CA is refused.
func TestListenerTLS(t *testing.T) {
	cluster := startKfake(t, 3, kfake.SeedTopics(3, "t"))
	ca := testpki.NewCA(t, "kproxy test CA")
	cfg := testConfig(cluster.ListenAddrs()...)
	cfg.TLS = listenerTLS(t, t.TempDir(), ca.Issue(t, testpki.Spec{CN: "kproxy", IPs: []string{"127.0.0.1"}}))
	log, logs := observedLogger()
	p := startProxy(t, cfg, log)

	t.Run("trusted", func(t *testing.T) {
		if err := produceConsume(t, 20*time.Second, p.Addr().String(), "t", 100, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})); err != nil {
			t.Fatal(err)
		}
		// The records came from the three brokers, through their node
		// listeners, all of which speak TLS.
		for id, n := range p.nodesSnapshot() {
			tc, err := tls.Dial("tcp", n, &tls.Config{RootCAs: ca.Pool()})
			if err != nil {
				t.Fatalf("node %d listener %s: %v", id, n, err)
			}
			if v := tc.ConnectionState().Version; v < tls.VersionTLS12 {
				t.Errorf("node %d: TLS version %x; want 1.2 or later", id, v)
			}
			tc.Close()
		}
	})
	t.Run("untrusted CA", func(t *testing.T) {
		other := testpki.NewCA(t, "another CA")
		_, err := tls.Dial("tcp", p.Addr().String(), &tls.Config{RootCAs: other.Pool()})
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Fatalf("dial with another CA: %v; want an unknown authority error", err)
		}
	})
	t.Run("TLS 1.1 refused", func(t *testing.T) {
		_, err := tls.Dial("tcp", p.Addr().String(), &tls.Config{RootCAs: ca.Pool(), MaxVersion: tls.VersionTLS11})
		if err == nil {
			t.Fatal("a TLS 1.1 handshake succeeded; want TLS 1.2 at least")
		}
		waitFor(t, 5*time.Second, "the handshake failure log line", func() bool {
			return logs.FilterMessageSnippet("TLS handshake with the client failed").Len() > 0
		})
	})
	t.Run("failures logged at most once a second", func(t *testing.T) {
		const n = 50
		before := p.Stats().TLSHandshakeFailures
		start := time.Now()
		other := testpki.NewCA(t, "another CA")
		for range n {
			if _, err := tls.Dial("tcp", p.Addr().String(), &tls.Config{RootCAs: other.Pool()}); err == nil {
				t.Fatal("a handshake with an unknown CA succeeded")
			}
		}
		waitFor(t, 5*time.Second, "every failure counted", func() bool { return p.Stats().TLSHandshakeFailures-before == n })
		lines := logs.FilterMessageSnippet("TLS handshake with the client failed").Len()
		if most := 2 + int(time.Since(start)/time.Second); lines > most {
			t.Errorf("%d handshake failure lines for %d failures over %v; want at most one a second", lines, n, time.Since(start))
		}
	})
}

// nodesSnapshot returns the address of each open node listener.
func (p *Proxy) nodesSnapshot() map[int32]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int32]string{}
	for id, n := range p.nodes {
		if n.ln != nil {
			out[id] = n.ln.Addr().String()
		}
	}
	return out
}

// TestListenerMutualTLS: with a client CA, only clients presenting a
// certificate it signed get through, and every exchange of such a client
// carries its certificate's subject.
func TestListenerMutualTLS(t *testing.T) {
	cluster := startKfake(t, 1, kfake.SeedTopics(1, "t"))
	ca := testpki.NewCA(t, "kproxy CA")
	clientCA := testpki.NewCA(t, "client CA")
	dir := t.TempDir()
	cfg := testConfig(cluster.ListenAddrs()...)
	cfg.TLS = listenerTLS(t, dir, ca.Issue(t, testpki.Spec{CN: "kproxy", IPs: []string{"127.0.0.1"}}))
	cfg.TLS.ClientCAFile = testpki.WriteFile(t, dir, "clients.PEM", clientCA.PEM)
	log, logs := observedLogger()
	rec := &recorder{}
	p := startProxy(t, cfg, log, rec)

	tests := []struct {
		name   string
		certs  []tls.Certificate
		wantOK bool
	}{
		{"certificate of the client CA", []tls.Certificate{clientCA.Issue(t, testpki.Spec{CN: "app", Client: true}).TLSCert(t)}, true},
		{"no certificate", nil, false},
		{"certificate of another CA", []tls.Certificate{testpki.NewCA(t, "rogue").Issue(t, testpki.Spec{CN: "app", Client: true}).TLSCert(t)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := p.Stats().TLSHandshakeFailures
			tlsCfg := &tls.Config{RootCAs: ca.Pool(), Certificates: tt.certs}
			if tt.wantOK {
				if err := produceConsume(t, 20*time.Second, p.Addr().String(), "t", 10, kgo.DialTLSConfig(tlsCfg)); err != nil {
					t.Fatal(err)
				}
				waitFor(t, 5*time.Second, "exchanges observed", func() bool { xs, _ := rec.snapshot(); return len(xs) > 0 })
				xs, _ := rec.snapshot()
				for _, x := range xs {
					if x.ClientCert != "CN=app" {
						t.Fatalf("%s exchange from %s carries client certificate %q; want CN=app", decode.APIName(x.APIKey), x.ClientAddr, x.ClientCert)
					}
				}
				return
			}
			// With TLS 1.3 the client learns of the refusal on its first
			// read, after its handshake.
			tc, err := tls.Dial("tcp", p.Addr().String(), tlsCfg)
			if err == nil {
				err = apiVersionsRoundTrip(tc, 1)
				tc.Close()
			}
			if err == nil {
				t.Fatal("a request went through; want the connection refused")
			}
			waitFor(t, 5*time.Second, "the handshake failure counted", func() bool { return p.Stats().TLSHandshakeFailures == before+1 })
		})
	}
	// Each failure is counted (above); the lines are at most one a second.
	if n := logs.FilterMessageSnippet("TLS handshake with the client failed").Len(); n < 1 || n > 2 {
		t.Errorf("%d handshake failure lines for 2 failures; want 1 or 2", n)
	}
}

// TestPlaintextOnTLSListener: a plaintext Kafka request on a TLS listener
// is logged as such, and costs no broker connection.
func TestPlaintextOnTLSListener(t *testing.T) {
	ca := testpki.NewCA(t, "kproxy CA")
	var dials atomic.Int32
	cfg := fakeConfig("127.0.0.1:1")
	cfg.TLS = listenerTLS(t, t.TempDir(), ca.Issue(t, testpki.Spec{CN: "kproxy", IPs: []string{"127.0.0.1"}}))
	log, logs := observedLogger()
	p := newProxy(t, cfg, log)
	p.dial = func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		return nil, fmt.Errorf("no broker in this test")
	}
	runProxy(t, p)

	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := apiVersionsRoundTrip(c, 7); err == nil {
		t.Fatal("a plaintext request got an answer from a TLS listener")
	}
	waitFor(t, 5*time.Second, "the plaintext log line", func() bool {
		return logs.FilterMessageSnippet("plaintext Kafka request on a TLS listener").Len() == 1
	})
	line := logs.FilterMessageSnippet("plaintext Kafka request on a TLS listener").All()[0]
	if !strings.Contains(line.Message, "security.protocol=SSL") {
		t.Errorf("log line %q does not say how to configure the client", line.Message)
	}
	if st := p.Stats(); st.PlaintextOnTLS != 1 || st.TLSHandshakeFailures != 0 {
		t.Errorf("stats %+v: want 1 plaintext connection on TLS and no handshake failure", st)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("kproxy dialed the broker %d times for a plaintext client; want 0", n)
	}
}
