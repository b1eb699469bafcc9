package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// TestUpstreamTLS: kproxy dials TLS brokers (kfake serving TLS, which
// advertises its brokers as 127.0.0.1) and verifies on each connection
// the name of the address it dials: the seed's for bootstrap connections,
// the one the broker advertises in Metadata for node connections.
func TestUpstreamTLS(t *testing.T) {
	ca := testpki.NewCA(t, "cluster CA")
	otherCA := testpki.NewCA(t, "another CA")
	kproxyClient := ca.Issue(t, testpki.Spec{CN: "kproxy", Client: true})
	tests := []struct {
		name string
		// broker is the brokers' certificate.
		broker testpki.Spec
		// requireClientCert makes the brokers want kproxy's certificate.
		requireClientCert bool
		// seedHost replaces 127.0.0.1 in the seed address.
		seedHost string
		upstream func(dir string) *UpstreamTLS
		// wantLog are in the log (a message or an error) when the
		// client fails; none means the client works.
		wantLog []string
		// notLog are in no log line or error.
		notLog []string
	}{
		{
			name:   "verified",
			broker: testpki.Spec{CN: "broker", IPs: []string{"127.0.0.1"}},
			upstream: func(dir string) *UpstreamTLS {
				return &UpstreamTLS{CAFile: testpki.WriteFile(t, dir, "ca.PEM", ca.PEM)}
			},
		},
		{
			// The seed is dialed as localhost, which the certificate
			// names, so bootstrap works; but the brokers advertise
			// 127.0.0.1, which it does not name, and node connections
			// verify that.
			name:     "advertised name not in the certificate",
			broker:   testpki.Spec{CN: "broker", DNS: []string{"localhost"}},
			seedHost: "localhost",
			upstream: func(dir string) *UpstreamTLS {
				return &UpstreamTLS{CAFile: testpki.WriteFile(t, dir, "ca.PEM", ca.PEM)}
			},
			wantLog: []string{"cannot reach the broker", `verifying the name "127.0.0.1"`,
				"does not name the host it advertises"},
			notLog: []string{`verifying the name "localhost"`},
		},
		{
			name:   "server name override",
			broker: testpki.Spec{CN: "broker", DNS: []string{"kafka.internal"}},
			upstream: func(dir string) *UpstreamTLS {
				return &UpstreamTLS{CAFile: testpki.WriteFile(t, dir, "ca.PEM", ca.PEM), ServerName: "kafka.internal"}
			},
		},
		{
			name:   "wrong CA",
			broker: testpki.Spec{CN: "broker", IPs: []string{"127.0.0.1"}},
			upstream: func(dir string) *UpstreamTLS {
				return &UpstreamTLS{CAFile: testpki.WriteFile(t, dir, "ca.PEM", otherCA.PEM)}
			},
			wantLog: []string{"cannot reach the broker", "certificate signed by unknown authority",
				"not signed by a CA of upstream-ca"},
		},
		{
			name:     "insecure skip verify",
			broker:   testpki.Spec{CN: "broker", IPs: []string{"127.0.0.1"}},
			upstream: func(dir string) *UpstreamTLS { return &UpstreamTLS{InsecureSkipVerify: true} },
		},
		{
			name:              "mutual TLS",
			broker:            testpki.Spec{CN: "broker", IPs: []string{"127.0.0.1"}},
			requireClientCert: true,
			upstream: func(dir string) *UpstreamTLS {
				return &UpstreamTLS{CAFile: testpki.WriteFile(t, dir, "ca.PEM", ca.PEM),
					CertFile: testpki.WriteFile(t, dir, "client.crt", kproxyClient.CertPEM), KeyFile: testpki.WriteFile(t, dir, "client.key", kproxyClient.KeyPEM)}
			},
		},
		{
			name:              "mutual TLS without a client certificate",
			broker:            testpki.Spec{CN: "broker", IPs: []string{"127.0.0.1"}},
			requireClientCert: true,
			upstream: func(dir string) *UpstreamTLS {
				return &UpstreamTLS{CAFile: testpki.WriteFile(t, dir, "ca.PEM", ca.PEM)}
			},
			// TLS 1.3: the broker refuses after kproxy's handshake is done.
			wantLog: []string{"broker closed the connection", "certificate required"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serverTLS := &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, tt.broker).TLSCert(t)}}
			if tt.requireClientCert {
				serverTLS.ClientAuth, serverTLS.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool()
			}
			cluster := startKfake(t, 2, kfake.TLS(serverTLS), kfake.SeedTopics(2, "t"))
			seeds := cluster.ListenAddrs()
			if tt.seedHost != "" {
				for i, s := range seeds {
					_, port, _ := net.SplitHostPort(s)
					seeds[i] = net.JoinHostPort(tt.seedHost, port)
				}
			}
			cfg := testConfig(seeds...)
			cfg.UpstreamTLS = tt.upstream(t.TempDir())
			log, logs := observedLogger()
			p := startProxy(t, cfg, log)

			if len(tt.wantLog) == 0 {
				if err := produceConsume(t, 20*time.Second, p.Addr().String(), "t", 20); err != nil {
					t.Fatal(err)
				}
				return
			}
			// The refusal is logged long before the client gives up: the
			// client stops waiting once every wanted line is there.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			go func() {
				for !loggedAll(logs, tt.wantLog) && ctx.Err() == nil {
					time.Sleep(10 * time.Millisecond)
				}
				cancel()
			}()
			err := produceConsumeCtx(ctx, p.Addr().String(), "t", 20)
			if err == nil {
				t.Fatal("records went through; want the broker connections refused")
			}
			for _, want := range tt.wantLog {
				if !logged(logs, want) {
					t.Errorf("no log line or error with %q", want)
				}
			}
			for _, s := range tt.notLog {
				if logged(logs, s) {
					t.Errorf("a log line or error has %q", s)
				}
			}
		})
	}
}

// loggedAll reports whether each of ss is logged.
func loggedAll(logs *observer.ObservedLogs, ss []string) bool {
	for _, s := range ss {
		if !logged(logs, s) {
			return false
		}
	}
	return true
}

// logged reports whether a log entry's message or error holds s.
func logged(logs *observer.ObservedLogs, s string) bool {
	for _, e := range logs.All() {
		if err, _ := e.ContextMap()["error"].(string); strings.Contains(e.Message, s) || strings.Contains(err, s) {
			return true
		}
	}
	return false
}
