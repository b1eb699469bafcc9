package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/internal/testpki"
	"github.com/kproxy-dev/kproxy/proxy"
)

// exitOnFatal is testpki's T for a command: Fatal prints and exits.
type exitOnFatal struct{}

func (exitOnFatal) Helper() {}

func (exitOnFatal) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"kproxy-bench: certificates:"}, args...)...)
	os.Exit(1)
}

// tlsModes starts a TLS kfake cluster and a kproxy speaking TLS on both
// sides in front of it, with certificates made for the run (written under
// dir), and returns the two modes that reach the cluster: direct TLS and
// kproxy TLS. Both end when ctx is done; wait for the returned channel.
func tlsModes(ctx context.Context, dir string) ([]mode, <-chan error, func(), error) {
	t := exitOnFatal{}
	ca := testpki.NewCA(t, "kproxy-bench CA")
	brokerCert := ca.Issue(t, testpki.Spec{CN: "kfake", IPs: []string{"127.0.0.1"}})
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{brokerCert.TLSCert(t)}}))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("start kfake with TLS: %w", err)
	}
	kproxyCert := ca.Issue(t, testpki.Spec{CN: "kproxy", IPs: []string{"127.0.0.1"}})
	p, err := proxy.New(proxy.Config{
		Listen:    "127.0.0.1:0",
		Upstreams: cluster.ListenAddrs(),
		TLS: &proxy.ListenerTLS{
			CertFile: testpki.WriteFile(t, dir, "kproxy.crt", kproxyCert.CertPEM),
			KeyFile:  testpki.WriteFile(t, dir, "kproxy.key", kproxyCert.KeyPEM),
		},
		UpstreamTLS: &proxy.UpstreamTLS{CAFile: testpki.WriteFile(t, dir, "ca.pem", ca.PEM)},
	}, zap.NewNop())
	if err != nil {
		cluster.Close()
		return nil, nil, nil, fmt.Errorf("start kproxy with TLS: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	clientTLS := kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})
	modes := []mode{
		{name: "direct TLS", seed: cluster.ListenAddrs()[0], opts: []kgo.Opt{clientTLS}},
		{name: "kproxy TLS", seed: p.Addr().String(), opts: []kgo.Opt{clientTLS}},
	}
	return modes, done, cluster.Close, nil
}
