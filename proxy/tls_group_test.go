package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// TestConsumerGroupThroughTLS: with TLS on both sides a cooperative group
// of two members rebalances through kproxy, and the observer sees the
// same joins and syncs as in plaintext (TestConsumerGroups): TLS changes
// the transport, not what kproxy reads.
func TestConsumerGroupThroughTLS(t *testing.T) {
	ca := testpki.NewCA(t, "test CA")
	broker := ca.Issue(t, testpki.Spec{CN: "broker", IPs: []string{"127.0.0.1"}})
	cluster := startKfake(t, 2, kfake.SeedTopics(groupPartitions, groupTopic),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{broker.TLSCert(t)}}))
	dir := t.TempDir()
	cfg := testConfig(cluster.ListenAddrs()...)
	cfg.TLS = listenerTLS(t, dir, ca.Issue(t, testpki.Spec{CN: "kproxy", IPs: []string{"127.0.0.1"}}))
	cfg.UpstreamTLS = &UpstreamTLS{CAFile: testpki.WriteFile(t, dir, "ca.pem", ca.PEM)}
	rec := &recorder{}
	p := newProxy(t, cfg, nil)
	pl := runProxy(t, p, rec)

	// TLS from 127.0.0.2, so that a connection kfake accepts from there
	// would be a client that bypassed kproxy.
	d := &tls.Dialer{NetDialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second},
		Config: &tls.Config{RootCAs: ca.Pool()}}
	dial := kgo.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	})
	opts := []kgo.Opt{dial, kgo.Balancers(kgo.CooperativeStickyBalancer())}
	a := startMember(t, p.Addr().String(), "tls-group", "member-a", opts...)
	waitFor(t, 20*time.Second, "member a to own every partition", func() bool { return settled(a) })
	b := startMember(t, p.Addr().String(), "tls-group", "member-b", opts...)
	waitFor(t, 30*time.Second, "the two members to split the partitions", func() bool { return settled(a, b) })
	for _, m := range []*member{a, b} {
		waitFor(t, 10*time.Second, "the observer to see the member's join and sync", func() bool {
			return checkClassic(rec, "tls-group", "cooperative-sticky", m) == ""
		})
	}
	if st, undecoded := p.Stats(), pl.Stats().Undecoded; undecoded != 0 || st.TLSHandshakeFailures != 0 {
		t.Errorf("stats %+v, %d undecoded: want no undecoded exchange and no failed handshake", st, undecoded)
	}
	for _, remote := range cluster.Accepted() {
		if host, _, _ := net.SplitHostPort(remote); host == "127.0.0.2" {
			t.Errorf("kfake accepted a connection from %s: a group client bypassed kproxy", remote)
		}
	}
	// No client CA: no client certificate asked for, none named.
	xs, _ := rec.snapshot()
	for _, x := range xs {
		if x.ClientCert != "" {
			t.Fatalf("an exchange carries client certificate %q without mutual TLS", x.ClientCert)
		}
	}
}
