package main

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// TestEventsTLS: with the brokers requiring TLS and a client certificate,
// the events client dials them with kproxy's upstream TLS settings (its
// CA, certificate and key): the topic is created and the group's
// exchanges published.
func TestEventsTLS(t *testing.T) {
	brokerCA := testpki.NewCA(t, "cluster CA")
	brokerCert := brokerCA.Issue(t, testpki.Spec{CN: "broker", IPs: []string{"127.0.0.1"}})
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{brokerCert.TLSCert(t)},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: brokerCA.Pool()}))
	client := brokerCA.Issue(t, testpki.Spec{CN: "kproxy", Client: true})
	dir := t.TempDir()
	cfg := testConfig(t, c.ListenAddrs()...)
	cfg.UpstreamTLS = true
	cfg.UpstreamCA = testpki.WriteFile(t, dir, "ca.crt", brokerCA.PEM)
	cfg.UpstreamCert = testpki.WriteFile(t, dir, "kproxy.crt", client.CertPEM)
	cfg.UpstreamKey = testpki.WriteFile(t, dir, "kproxy.key", client.KeyPEM)
	cfg.EventsTopic = fleetTopic
	s, stop := startServer(t, cfg, serveHooks{})
	waitFor(t, "the events topic created over TLS", func() bool { return s.events.Stats().TopicReady })

	cl, err := kgo.NewClient(kgo.SeedBrokers(s.proxy.Addr().String()), kgo.ConsumeTopics("t"), kgo.ConsumerGroup("tls-group"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	cl.PollFetches(ctx) // joins the group; nothing to fetch
	cancel()
	cl.Close()
	if err := stop(); err != nil {
		t.Fatalf("run() = %v", err)
	}
	if st := s.events.Stats(); st.Published == 0 || st.Dropped != 0 {
		t.Errorf("publisher %+v; want the group's exchanges published over TLS, none dropped", st)
	}
}
