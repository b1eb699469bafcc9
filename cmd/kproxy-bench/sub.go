package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runBroker is `kproxy-bench broker`: a kfake cluster of one broker in a
// process of its own. It prints its address on stdout, then runs until
// stdin closes or a signal comes.
func runBroker(args []string) error {
	fs := flag.NewFlagSet("broker", flag.ExitOnError)
	port := fs.Int("port", 0, "port to listen on (0: any free port)")
	cert := fs.String("tls-cert", "", "PEM certificate: the broker speaks TLS")
	key := fs.String("tls-key", "", "PEM key of -tls-cert")
	fs.Parse(args) //nolint:errcheck // ExitOnError
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3)}
	if *port != 0 {
		opts = append(opts, kfake.Ports(*port))
	}
	if *cert != "" {
		c, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			return fmt.Errorf("broker certificate: %w", err)
		}
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{c}}))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	defer cluster.Close()
	fmt.Println(cluster.ListenAddrs()[0])
	stdinClosed := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
		}
		close(stdinClosed)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-stdinClosed:
	case <-sig:
	}
	return nil
}

// phaseResult is what `kproxy-bench client` prints: the phase's duration
// and, for the latency phase, each round trip.
type phaseResult struct {
	Seconds     float64 `json:"seconds"`
	LatenciesNs []int64 `json:"latencies_ns,omitempty"`
}

// runClient is `kproxy-bench client`: one phase of a round (produce,
// fetch, latency or delete), or the groups that fill a kproxy's timeline
// before the rounds (groups), by a franz-go client in a process of its own,
// printing a phaseResult as JSON.
func runClient(args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	seed := fs.String("seed", "", "bootstrap address")
	phase := fs.String("phase", "", "produce, fetch, latency, delete or groups")
	topic := fs.String("topic", "", "topic of the round")
	records := fs.Int("records", 50000, "records produced or fetched")
	size := fs.Int("size", 1024, "record value size in bytes")
	latencyN := fs.Int("latency-requests", 2000, "sequential single-record produce requests")
	noCompression := fs.Bool("no-compression", false, "produce uncompressed batches")
	ca := fs.String("tls-ca", "", "PEM CA: speak TLS, trusting it")
	dial := fs.String("dial", "", "dial this address for every broker (a forwarder, which rewrites no broker address)")
	groups := fs.Int("groups", 200, "groups: consumer groups to run")
	gens := fs.Int("generations", 5, "groups: times each group is joined and left")
	fs.Parse(args) //nolint:errcheck // ExitOnError
	m := mode{name: *phase, seed: *seed}
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			return fmt.Errorf("read CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("no certificate in %s", *ca)
		}
		m.opts = []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool})}
	}
	if *dial != "" {
		var d net.Dialer
		m.opts = append(m.opts, kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, *dial)
		}))
	}
	ctx := context.Background()
	var out phaseResult
	switch *phase {
	case "produce":
		d, err := produce(ctx, m, *topic, *records, *size, *noCompression)
		if err != nil {
			return err
		}
		out.Seconds = d.Seconds()
	case "fetch":
		d, err := fetch(ctx, m, *topic, *records)
		if err != nil {
			return err
		}
		out.Seconds = d.Seconds()
	case "latency":
		start := time.Now()
		lat, err := produceLatency(ctx, m, *topic+"-latency", *latencyN)
		if err != nil {
			return err
		}
		out.Seconds = time.Since(start).Seconds()
		for _, l := range lat {
			out.LatenciesNs = append(out.LatenciesNs, l.Nanoseconds())
		}
	case "delete":
		if err := deleteTopics(ctx, m, *topic, *topic+"-latency"); err != nil {
			return err
		}
	case "groups":
		if err := fillGroups(ctx, m, *topic, *groups, *gens); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown phase %q", *phase)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
