package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// resolvingTLSDialer is a kgo dialer that resolves every host name to
// 127.0.0.1, speaks TLS asking for the host name (SNI), and records the
// names it was asked for.
type resolvingTLSDialer struct {
	cfg   *tls.Config
	mu    sync.Mutex
	names map[string]bool
}

func (d *resolvingTLSDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.names[host] = true
	d.mu.Unlock()
	cfg := d.cfg.Clone()
	cfg.ServerName = host
	td := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}
	return td.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
}

func (d *resolvingTLSDialer) asked() map[string]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]bool{}
	for k := range d.names {
		out[k] = true
	}
	return out
}

// TestSNIRouting: with an SNI host pattern, a client seeded with a
// bootstrap name reaches every broker through the bootstrap port alone,
// each by the name the pattern gives it, and kproxy opens no node
// listener.
func TestSNIRouting(t *testing.T) {
	// kfake picks each partition's leader at random, and a broker that
	// leads none may never be dialed: with 30 partitions that happens once
	// in about 64,000 runs (3 x (2/3)^30), with 6 once in four.
	cluster := startKfake(t, 3, kfake.SeedTopics(30, "t"))
	ca := testpki.NewCA(t, "kproxy CA")
	cfg := testConfig(cluster.ListenAddrs()...)
	cfg.BrokerListeners = nil
	cfg.TLS = listenerTLS(t, t.TempDir(), ca.Issue(t, testpki.Spec{CN: "kproxy", DNS: []string{"*.kproxy.test"}}))
	cfg.SNIHostPattern = "broker-$(nodeId).kproxy.test"
	p := newProxy(t, cfg, nil)
	// As serve does before Run: with SNI routing no node listener is
	// expected, so none is missing.
	if err := p.CheckListeners(context.Background()); err != nil {
		t.Fatalf("CheckListeners: %v; want nil with SNI routing", err)
	}
	runProxy(t, p)
	_, port, _ := net.SplitHostPort(p.Addr().String())

	d := &resolvingTLSDialer{cfg: &tls.Config{RootCAs: ca.Pool()}, names: map[string]bool{}}
	if err := produceConsume(t, 20*time.Second, net.JoinHostPort("bootstrap.kproxy.test", port), "t", 300, kgo.Dialer(d.dial)); err != nil {
		t.Fatal(err)
	}
	asked := d.asked()
	for id := range 3 {
		if name := "broker-" + strconv.Itoa(id) + ".kproxy.test"; !asked[name] {
			t.Errorf("the client never dialed %s; it dialed %v", name, asked)
		}
	}
	if open := p.nodesSnapshot(); len(open) != 0 {
		t.Errorf("node listeners %v opened; want none with SNI routing", open)
	}
	// Each broker connection went to the broker its name says.
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, n := range p.nodes {
		if want := cluster.ListenAddrs()[id]; n.upstream != want {
			t.Errorf("node %d upstream %s; want %s", id, n.upstream, want)
		}
	}
}

// TestSNIRoutesByName: a connection asking for a node's name is served by
// that node's broker; any other name by a seed.
func TestSNIRoutesByName(t *testing.T) {
	s, err := parseSNIPattern("Broker-$(nodeId).kproxy.test")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		wantID int32
		wantOK bool
	}{
		{"broker-0.kproxy.test", 0, true},
		{"BROKER-12.kproxy.test.", 12, true},
		{"broker-2147483647.kproxy.test", 2147483647, true},
		{"broker-2147483648.kproxy.test", 0, false},
		{"broker-01.kproxy.test", 0, false},
		{"broker--1.kproxy.test", 0, false},
		{"broker-.kproxy.test", 0, false},
		{"bootstrap.kproxy.test", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := s.nodeOf(tt.name)
			if id != tt.wantID || ok != tt.wantOK {
				t.Errorf("nodeOf(%q) = %d, %v; want %d, %v", tt.name, id, ok, tt.wantID, tt.wantOK)
			}
		})
	}
	if got := s.host(7); got != "broker-7.kproxy.test" {
		t.Errorf("host(7) = %q; want broker-7.kproxy.test", got)
	}
}

// TestSNICertificateMustCoverPattern: New refuses a certificate that does
// not cover the names of the pattern, and a pattern without the
// placeholder; a reload to such a certificate is refused too.
func TestSNICertificateMustCoverPattern(t *testing.T) {
	ca := testpki.NewCA(t, "kproxy CA")
	tests := []struct {
		name    string
		pattern string
		dns     []string
		wantErr string
	}{
		{"wildcard", "broker-$(nodeId).kproxy.test", []string{"*.kproxy.test"}, ""},
		{"one name only", "broker-$(nodeId).kproxy.test", []string{"broker-0.kproxy.test"}, "does not cover the sni-host-pattern names (want a wildcard such as *.kproxy.test)"},
		{"wildcard of another domain", "broker-$(nodeId).kproxy.test", []string{"*.example.com"}, "does not cover"},
		{"node id below the wildcard", "$(nodeId).brokers.kproxy.test", []string{"*.kproxy.test"}, "does not cover"},
		{"no placeholder", "broker.kproxy.test", []string{"*.kproxy.test"}, "want $(nodeId) exactly once"},
		{"port", "broker-$(nodeId).kproxy.test:9093", []string{"*.kproxy.test"}, "without port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fakeConfig("127.0.0.1:1")
			cfg.BrokerListeners = nil
			cfg.TLS = listenerTLS(t, t.TempDir(), ca.Issue(t, testpki.Spec{CN: "kproxy", DNS: tt.dns}))
			cfg.SNIHostPattern = tt.pattern
			p, err := New(cfg, nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				defer p.bootstrap.Close()
				// A reload to a certificate that does not cover the
				// pattern keeps the one in use.
				bad := ca.Issue(t, testpki.Spec{CN: "kproxy", DNS: []string{"bootstrap.kproxy.test"}})
				testpki.WriteFile(t, "", cfg.TLS.CertFile, bad.CertPEM)
				testpki.WriteFile(t, "", cfg.TLS.KeyFile, bad.KeyPEM)
				if err := p.ReloadTLS(); err == nil || !strings.Contains(err.Error(), "does not cover") {
					t.Errorf("ReloadTLS of a certificate not covering the pattern: %v; want a refusal", err)
				}
				return
			}
			if err == nil {
				p.bootstrap.Close()
				t.Fatal("New accepted it")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New: %v; want an error with %q", err, tt.wantErr)
			}
		})
	}
}
