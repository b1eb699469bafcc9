package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// clientSerials records the serial number of the client certificate of
// each TLS connection a broker accepts.
type clientSerials struct {
	mu   sync.Mutex
	last *big.Int
}

func (s *clientSerials) verify(cs tls.ConnectionState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(cs.PeerCertificates) > 0 {
		s.last = cs.PeerCertificates[0].SerialNumber
	}
	return nil
}

func (s *clientSerials) lastSerial() *big.Int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// TestUpstreamTLSReload: the brokers' CA and kproxy's client certificate
// are reloaded like the listener certificate, when the files change or on
// ReloadTLS (SIGHUP). New broker connections use what was loaded last,
// open ones keep theirs, and a reload that fails keeps the previous files'
// configuration and is logged, without key material.
func TestUpstreamTLSReload(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		// reload writes files (write) and makes kproxy take them, and
		// checks that the reload succeeded (ok) or failed.
		reload func(t *testing.T, p *Proxy, logs *observer.ObservedLogs, write func(), ok bool)
	}{
		{
			name:     "files changed",
			interval: 20 * time.Millisecond,
			reload: func(t *testing.T, _ *Proxy, logs *observer.ObservedLogs, write func(), ok bool) {
				msg := "upstream TLS CA and client certificate reloaded"
				if !ok {
					msg = "upstream TLS CA and client certificate reload failed; keeping the previous one"
				}
				// Only entries after the files were written count. (A poll
				// that reads a new certificate with the old key fails
				// before the success waited for.)
				before := logs.FilterMessageSnippet(msg).Len()
				write()
				waitFor(t, 5*time.Second, msg, func() bool { return logs.FilterMessageSnippet(msg).Len() > before })
			},
		},
		{
			name:     "ReloadTLS",
			interval: time.Hour,
			reload: func(t *testing.T, p *Proxy, _ *observer.ObservedLogs, write func(), ok bool) {
				write()
				err := p.ReloadTLS()
				if ok && err != nil {
					t.Fatalf("ReloadTLS: %v", err)
				}
				if !ok && err == nil {
					t.Fatal("ReloadTLS succeeded; want the broken files refused")
				}
				if !ok && !strings.Contains(err.Error(), "upstream-cert") {
					t.Errorf("ReloadTLS: %v; want the error to name upstream-cert", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			brokerCA := testpki.NewCA(t, "cluster CA")
			clientCA := testpki.NewCA(t, "cluster clients CA")
			otherCA := testpki.NewCA(t, "another CA")
			serials := &clientSerials{}
			cluster := startKfake(t, 1, kfake.SeedTopics(1, "t"), kfake.TLS(&tls.Config{
				Certificates:     []tls.Certificate{brokerCA.Issue(t, testpki.Spec{CN: "broker", IPs: []string{"127.0.0.1"}}).TLSCert(t)},
				ClientAuth:       tls.RequireAndVerifyClientCert,
				ClientCAs:        clientCA.Pool(),
				VerifyConnection: serials.verify,
			}))
			seed := cluster.ListenAddrs()[0]
			dir := t.TempDir()
			writeClient := func(c testpki.Issued) {
				testpki.WriteFile(t, dir, "client.crt", c.CertPEM)
				testpki.WriteFile(t, dir, "client.key", c.KeyPEM)
			}
			// brokerSees dials the broker as kproxy does for a new
			// connection, and returns the client certificate the broker
			// saw; the connection stays open.
			brokerSees := func(p *Proxy) (*big.Int, net.Conn, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				nc, err := p.dialBroker(ctx, seed)
				if err != nil {
					return nil, nil, err
				}
				t.Cleanup(func() { nc.Close() })
				if err := apiVersionsRoundTrip(nc, 1); err != nil {
					return nil, nil, fmt.Errorf("request on a new broker connection: %w", err)
				}
				return serials.lastSerial(), nc, nil
			}
			wantSees := func(p *Proxy, step string, want testpki.Issued) net.Conn {
				t.Helper()
				got, nc, err := brokerSees(p)
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				if got.Cmp(want.Serial) != 0 {
					t.Fatalf("%s: the broker saw client certificate %v; want %v", step, got, want.Serial)
				}
				return nc
			}

			// A wrong CA at start: broker connections fail to verify.
			first := clientCA.Issue(t, testpki.Spec{CN: "kproxy 1", Client: true})
			writeClient(first)
			cfg := fakeConfig(seed)
			cfg.UpstreamTLS = &UpstreamTLS{CAFile: testpki.WriteFile(t, dir, "ca.pem", otherCA.PEM),
				CertFile: dir + "/client.crt", KeyFile: dir + "/client.key", ReloadInterval: tt.interval}
			log, logs := observedLogger()
			p := startProxy(t, cfg, log)
			if _, _, err := brokerSees(p); err == nil || !strings.Contains(err.Error(), "unknown authority") {
				t.Fatalf("with the wrong CA: %v; want the broker's certificate refused", err)
			}

			// The right CA.
			tt.reload(t, p, logs, func() { testpki.WriteFile(t, dir, "ca.pem", brokerCA.PEM) }, true)
			old := wantSees(p, "after the CA was fixed", first)

			// A new client certificate: new connections present it,
			// clients through kproxy work, the open connection stays.
			second := clientCA.Issue(t, testpki.Spec{CN: "kproxy 2", Client: true})
			tt.reload(t, p, logs, func() { writeClient(second) }, true)
			wantSees(p, "after a new client certificate", second)
			if err := produceConsume(t, 20*time.Second, p.Addr().String(), "t", 10); err != nil {
				t.Fatalf("a client through kproxy after the reload: %v", err)
			}
			if err := apiVersionsRoundTrip(old, 2); err != nil {
				t.Fatalf("the broker connection opened before the reload: %v", err)
			}

			// A broken key: the reload fails, and the second certificate
			// stays.
			tt.reload(t, p, logs, func() {
				testpki.WriteFile(t, dir, "client.key", []byte("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"))
			}, false)
			wantSees(p, "after a failed reload", second)

			// A certificate the broker does not trust: new connections are
			// refused by the broker, the open one goes on.
			stranger := otherCA.Issue(t, testpki.Spec{CN: "stranger", Client: true})
			tt.reload(t, p, logs, func() { writeClient(stranger) }, true)
			if _, _, err := brokerSees(p); err == nil {
				t.Error("the broker accepted a client certificate of a CA it does not trust: the reload was not used")
			}
			if err := apiVersionsRoundTrip(old, 3); err != nil {
				t.Fatalf("the broker connection opened before the reloads: %v", err)
			}

			secrets := []string{"bm90IGEga2V5"}
			for _, k := range [][]byte{first.KeyPEM, second.KeyPEM} {
				secrets = append(secrets, strings.Split(string(k), "\n")[1])
			}
			for _, e := range logs.All() {
				line := fmt.Sprint(e.Message, e.ContextMap())
				for _, secret := range secrets {
					if strings.Contains(line, secret) {
						t.Errorf("log line %q holds key material", e.Message)
					}
				}
			}
		})
	}
}

// TestUpstreamTLSFilesAtStart: New refuses upstream TLS files that do not
// load, saying which.
func TestUpstreamTLSFilesAtStart(t *testing.T) {
	ca := testpki.NewCA(t, "cluster CA")
	dir := t.TempDir()
	caFile := testpki.WriteFile(t, dir, "ca.pem", ca.PEM)
	one := ca.Issue(t, testpki.Spec{CN: "kproxy 1", Client: true})
	two := ca.Issue(t, testpki.Spec{CN: "kproxy 2", Client: true})
	certFile := testpki.WriteFile(t, dir, "client.crt", one.CertPEM)
	otherKey := testpki.WriteFile(t, dir, "other.key", two.KeyPEM)
	tests := []struct {
		name     string
		upstream UpstreamTLS
		wantErr  string
	}{
		{"missing CA file", UpstreamTLS{CAFile: dir + "/nope.pem"},
			"proxy: upstream TLS CA and client certificate: open " + dir + "/nope.pem"},
		{"CA file without a certificate", UpstreamTLS{CAFile: otherKey},
			"proxy: upstream-ca: " + otherKey + ": no PEM certificate in it"},
		{"key of another certificate", UpstreamTLS{CAFile: caFile, CertFile: certFile, KeyFile: otherKey},
			"proxy: upstream-cert: certificate " + certFile + " with key " + otherKey},
		{"certificate without key", UpstreamTLS{CertFile: certFile},
			"proxy: upstream-cert and upstream-key: set both or neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fakeConfig("127.0.0.1:1")
			cfg.UpstreamTLS = &tt.upstream
			p, err := New(cfg, nil)
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
