//go:build integration

package proxy

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestClientReauthenticationForwarded: a client authenticating as itself
// (SCRAM, SaslHandshake v1 and SaslAuthenticate v2) re-authenticates on its
// live connections through kproxy when the broker's session lifetime is
// short (KIP-368), keeps producing without an error, and no SASL exchange
// or password reaches an observer or the log.
func TestClientReauthenticationForwarded(t *testing.T) {
	const password = "client-scram-pw-91f3"
	cluster := startKfake(t, 1, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "alice", password),
		kfake.SeedTopics(1, "reauth"), kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": "1200"}))
	handshakes := countHandshakes(cluster)
	rec := &recorder{}
	log, logs := debugLogger()
	p := startProxy(t, testConfig(cluster.ListenAddrs()...), log, rec)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.DefaultProduceTopic("reauth"),
		kgo.SASL(scram.Auth{User: "alice", Pass: password}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("r")}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if got, accepted := handshakes.Load(), int64(len(cluster.Accepted())); got <= accepted {
		t.Errorf("%d SaslHandshake requests on %d connections; want re-authentications on live connections", got, accepted)
	}
	if st := p.Stats(); st.CorrelationMismatches != 0 {
		t.Errorf("CorrelationMismatches = %d; want 0", st.CorrelationMismatches)
	}
	xs, _ := rec.snapshot()
	for _, x := range xs {
		if x.APIKey == 17 || x.APIKey == 36 {
			t.Errorf("observer saw a SASL exchange (api key %d)", x.APIKey)
		}
		if bytes.Contains(x.Request, []byte(password)) || bytes.Contains(x.Response, []byte(password)) {
			t.Errorf("observer saw the password in a %d exchange", x.APIKey)
		}
	}
	checkNoSecret(t, logs, password)
}
