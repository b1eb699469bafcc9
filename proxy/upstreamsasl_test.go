package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// upstreamPassword is the password of kproxy's upstream user in these
// tests; no log line may hold it.
const upstreamPassword = "kproxy-upstream-pw-7c1e"

// countHandshakes makes cluster count the SaslHandshake requests it gets.
func countHandshakes(cluster *fakeCluster) *atomic.Int64 {
	var n atomic.Int64
	cluster.ControlKey(17, func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		n.Add(1)
		return nil, nil, false
	})
	return &n
}

// debugLogger records every entry, debug included, for the tests that grep
// the log for a password.
func debugLogger() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

// checkNoSecret fails when any recorded log entry, message or field, holds
// secret.
func checkNoSecret(t *testing.T, logs *observer.ObservedLogs, secret string) {
	t.Helper()
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + strings.ReplaceAll(strings.TrimSpace(fmtAny(v)), "\n", " ")
		}
		if strings.Contains(line, secret) {
			t.Errorf("log entry holds the password: %s", line)
		}
	}
}

// TestUpstreamSASL: with kproxy authenticating upstream, a client without
// credentials produces and consumes through it, for each mechanism, and
// nothing kproxy logs holds the password.
func TestUpstreamSASL(t *testing.T) {
	for _, mech := range UpstreamSASLMechanisms {
		t.Run(mech, func(t *testing.T) {
			cluster := startKfake(t, 2, kfake.EnableSASL(), kfake.Superuser(mech, "kproxy", upstreamPassword),
				kfake.SeedTopics(2, "up"))
			cfg := testConfig(cluster.ListenAddrs()...)
			cfg.UpstreamSASL = UpstreamSASL{Mechanism: mech, Username: "kproxy", Password: upstreamPassword}
			log, logs := debugLogger()
			p := startProxy(t, cfg, log)
			produceConsumeNoSASL(t, p, "up")
			if st := p.Stats(); st.UpstreamSASLFailures != 0 {
				t.Errorf("UpstreamSASLFailures = %d; want 0", st.UpstreamSASLFailures)
			}
			checkNoSecret(t, logs, upstreamPassword)
		})
	}
}

// produceConsumeNoSASL produces a record to topic through p, with a client that
// has no SASL, and consumes it back in a group.
func produceConsumeNoSASL(t *testing.T, p *Proxy, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumerGroup("g-"+topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce without SASL through kproxy: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("consume without SASL through kproxy: %v", err)
	}
	if n := fs.NumRecords(); n != 1 {
		t.Fatalf("consumed %d records; want 1", n)
	}
}

// TestUpstreamSASLWrongPassword: a password the broker refuses fails the
// client's connections, counted, with a log line that says what to check
// and does not hold the password.
func TestUpstreamSASLWrongPassword(t *testing.T) {
	cluster := startKfake(t, 1, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "kproxy", "the-right-one"))
	cfg := testConfig(cluster.ListenAddrs()...)
	cfg.DisableBrokerDiscovery = true
	cfg.UpstreamSASL = UpstreamSASL{Mechanism: "SCRAM-SHA-256", Username: "kproxy", Password: upstreamPassword}
	log, logs := debugLogger()
	p := startProxy(t, cfg, log)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("Ping through kproxy with a wrong upstream password succeeded")
	}
	if st := p.Stats(); st.UpstreamSASLFailures == 0 {
		t.Error("UpstreamSASLFailures = 0; want the failures counted")
	}
	if n := logs.FilterMessageSnippet("cannot authenticate to the broker with kproxy's SASL credentials").Len(); n == 0 {
		t.Error("no log line says to check the upstream SASL credentials")
	}
	checkNoSecret(t, logs, upstreamPassword)
}

// TestUpstreamReauthentication: with connections.max.reauth.ms short, kproxy
// renews its SASL session on live upstream connections (KIP-368) while a
// client without credentials keeps producing on them, and the client sees
// no error.
func TestUpstreamReauthentication(t *testing.T) {
	cluster := startKfake(t, 1, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "kproxy", upstreamPassword),
		kfake.SeedTopics(1, "reauth"), kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": "600"}))
	handshakes := countHandshakes(cluster)
	cfg := testConfig(cluster.ListenAddrs()...)
	cfg.UpstreamSASL = UpstreamSASL{Mechanism: "SCRAM-SHA-512", Username: "kproxy", Password: upstreamPassword}
	log, logs := debugLogger()
	p := startProxy(t, cfg, log)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.DefaultProduceTopic("reauth"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 25; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("r")}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	st := p.Stats()
	if st.UpstreamReauthentications < 2 {
		t.Errorf("UpstreamReauthentications = %d after 2.5s of 600ms sessions; want at least 2", st.UpstreamReauthentications)
	}
	if st.UpstreamSASLFailures != 0 || st.CorrelationMismatches != 0 {
		t.Errorf("UpstreamSASLFailures = %d, CorrelationMismatches = %d; want 0, 0", st.UpstreamSASLFailures, st.CorrelationMismatches)
	}
	if got, accepted := handshakes.Load(), int64(len(cluster.Accepted())); got <= accepted {
		t.Errorf("%d SaslHandshake requests on %d connections; want more handshakes than connections", got, accepted)
	}
	checkNoSecret(t, logs, upstreamPassword)
}

// TestClientSASLRefusedWithUpstreamSASL: a client that brings its own SASL
// while kproxy authenticates upstream is closed with a log line telling it
// to drop SASL.
func TestClientSASLRefusedWithUpstreamSASL(t *testing.T) {
	cluster := startKfake(t, 1, kfake.EnableSASL(), kfake.Superuser("PLAIN", "kproxy", upstreamPassword))
	cfg := testConfig(cluster.ListenAddrs()...)
	cfg.UpstreamSASL = UpstreamSASL{Mechanism: "PLAIN", Username: "kproxy", Password: upstreamPassword}
	log, logs := debugLogger()
	p := startProxy(t, cfg, log)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.RequestRetries(0),
		kgo.SASL(plain.Auth{User: "client", Pass: "client-pw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("a client with its own SASL got through kproxy authenticating upstream")
	}
	if n := logs.FilterMessageSnippet("configure the client without SASL").Len(); n == 0 {
		t.Error("no log line tells the client to drop SASL")
	}
}

// TestUpstreamSASLConfig: the settings New refuses, each with its reason.
func TestUpstreamSASLConfig(t *testing.T) {
	ok := UpstreamSASL{Mechanism: "PLAIN", Username: "u", Password: "p"}
	for _, tc := range []struct {
		name   string
		edit   func(*Config)
		reason string // "" means accepted
	}{
		{"loopback", func(c *Config) { c.UpstreamSASL = ok }, ""},
		{"localhost", func(c *Config) { c.UpstreamSASL, c.Listen = ok, "localhost:0" }, ""},
		{"every interface", func(c *Config) { c.UpstreamSASL, c.Listen = ok, ":0" }, "reachable from other hosts"},
		{"broker listener open", func(c *Config) { c.UpstreamSASL, c.BrokerListeners[3] = ok, "0.0.0.0:0" }, "reachable from other hosts"},
		{"open with client certificates", func(c *Config) {
			c.UpstreamSASL, c.Listen = ok, ":0"
			c.TLS = &ListenerTLS{CertFile: "c.pem", KeyFile: "k.pem", ClientCAFile: "ca.pem"}
		}, ""},
		{"open with TLS but no client certificates", func(c *Config) {
			c.UpstreamSASL, c.Listen = ok, ":0"
			c.TLS = &ListenerTLS{CertFile: "c.pem", KeyFile: "k.pem"}
		}, "reachable from other hosts"},
		{"open allowed", func(c *Config) { c.UpstreamSASL, c.Listen, c.AllowOpenSASLProxy = ok, ":0", true }, ""},
		{"unknown mechanism", func(c *Config) { c.UpstreamSASL = ok; c.UpstreamSASL.Mechanism = "GSSAPI" }, "unknown SASL mechanism"},
		{"no username", func(c *Config) { c.UpstreamSASL = ok; c.UpstreamSASL.Username = "" }, "username required"},
		{"no password", func(c *Config) { c.UpstreamSASL = ok; c.UpstreamSASL.Password = "" }, "password required"},
		{"password without mechanism", func(c *Config) { c.UpstreamSASL.Password = "p" }, "without a mechanism"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("127.0.0.1:9092")
			tc.edit(&cfg)
			err := cfg.validate()
			switch {
			case tc.reason == "" && err != nil:
				t.Errorf("validate: %v; want accepted", err)
			case tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)):
				t.Errorf("validate: %v; want an error with %q", err, tc.reason)
			case err != nil && strings.Contains(err.Error(), "\"p\""):
				t.Errorf("validate error shows the password: %v", err)
			}
		})
	}
}

// TestUpstreamSASLLogsNoPassword: the configuration, logged or printed,
// never shows the password.
func TestUpstreamSASLLogsNoPassword(t *testing.T) {
	s := UpstreamSASL{Mechanism: "SCRAM-SHA-256", Username: "kproxy", Password: upstreamPassword}
	log, logs := debugLogger()
	log.Info("config", zap.Object("upstream_sasl", s), zap.Stringer("as_string", s), zap.Any("any", s))
	checkNoSecret(t, logs, upstreamPassword)
	if !strings.Contains(s.String(), "kproxy") {
		t.Errorf("String() = %q; want the username", s.String())
	}
}

// TestReauthTime: when kproxy renews a session of a given lifetime.
func TestReauthTime(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		lifetime int64
		want     time.Time
	}{
		{"no lifetime", 0, time.Time{}},
		{"negative", -5, time.Time{}},
		{"ten seconds", 10000, start.Add(9 * time.Second)},
		{"huge", 1 << 62, start.Add(maxSessionLifetime * 9 / 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reauthTime(start, tc.lifetime); !got.Equal(tc.want) {
				t.Errorf("reauthTime(%d) = %v; want %v", tc.lifetime, got, tc.want)
			}
		})
	}
}

func fmtAny(v any) string { return fmt.Sprint(v) }
