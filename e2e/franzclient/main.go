// Command franzclient is the franz-go client of the kproxy e2e suite: a
// consumer that commits the offsets it processed when its partitions are
// revoked, and a producer that feeds a topic evenly across its partitions.
// Like every e2e client it prints one JSON event per line on stdout and logs
// to stderr.
//
//	franzclient consume -bootstrap B -group G -topic T [-client-id C] [-work-ms N] [-balancer roundrobin|range|cooperative-sticky]
//	franzclient produce -bootstrap B -topic T -count N
//
// Both take -tls-ca FILE (TLS to the brokers, trusting that CA) and
// -resolve NAME=IP or *.DOMAIN=IP (dial those names at IP, as a hosts entry
// would, for SNI routing without DNS); see dialOpts.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		emit("error", map[string]any{"error": err.Error()})
		fmt.Fprintln(os.Stderr, "franzclient:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: franzclient consume|produce -bootstrap B ...")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	switch args[0] {
	case "consume":
		return consume(ctx, args[1:])
	case "produce":
		return produce(ctx, args[1:])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

var outMu sync.Mutex

// emit prints {"event": name, "ms": epoch ms, ...fields} as one line.
func emit(name string, fields map[string]any) {
	line := map[string]any{"event": name, "ms": time.Now().UnixMilli()}
	for k, v := range fields {
		line[k] = v
	}
	b, _ := json.Marshal(line)
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

// sorted returns the partitions of each topic in order.
func sorted(m map[string][]int32) map[string][]int32 {
	out := make(map[string][]int32, len(m))
	for t, ps := range m {
		ps = append([]int32(nil), ps...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		out[t] = ps
	}
	return out
}

func balancer(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	case "range":
		return kgo.RangeBalancer(), nil
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer(), nil
	}
	return nil, fmt.Errorf("unknown balancer %q", name)
}

func consume(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("consume", flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "", "seed broker (kproxy's address)")
	group := fs.String("group", "", "consumer group")
	topic := fs.String("topic", "", "topic to consume")
	clientID := fs.String("client-id", "franz-go", "client id")
	workMS := fs.Int("work-ms", 0, "sleep after each non-empty poll")
	bal := fs.String("balancer", "roundrobin", "roundrobin, range or cooperative-sticky")
	sessionMS := fs.Int("session-ms", 10000, "session timeout, heartbeats every fifth of it; 0: franz-go's defaults (45 s, 3 s)")
	instanceID := fs.String("instance-id", "", "group.instance.id (static membership, KIP-345)")
	tlsCA := fs.String("tls-ca", "", "speak TLS to the brokers, trusting this PEM CA")
	resolve := fs.String("resolve", "", "NAME=IP or *.DOMAIN=IP: dial those hosts at IP")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dial, err := dialOpts(*tlsCA, *resolve)
	if err != nil {
		return err
	}
	if *instanceID != "" {
		dial = append(dial, kgo.InstanceID(*instanceID))
	}
	if *bootstrap == "" || *group == "" || *topic == "" {
		return errors.New("consume: -bootstrap, -group and -topic are required")
	}
	b, err := balancer(*bal)
	if err != nil {
		return err
	}

	// -session-ms 0 keeps franz-go's defaults.
	if *sessionMS > 0 {
		dial = append(dial, kgo.SessionTimeout(time.Duration(*sessionMS)*time.Millisecond),
			kgo.HeartbeatInterval(time.Duration(max(100, *sessionMS/5))*time.Millisecond))
	}

	// processed is touched by the poll loop and by the revoke callback, which
	// kgo runs inside a poll call or during close: both on this goroutine's
	// watch, but guard it anyway.
	var mu sync.Mutex
	processed := map[string]map[int32]kgo.EpochOffset{}
	commitRevoked := func(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
		emit("revoked", map[string]any{"partitions": sorted(revoked)})
		mu.Lock()
		offsets := map[string]map[int32]kgo.EpochOffset{}
		shown := map[string]map[string]int64{}
		for t, ps := range revoked {
			for _, p := range ps {
				if eo, ok := processed[t][p]; ok {
					if offsets[t] == nil {
						offsets[t] = map[int32]kgo.EpochOffset{}
						shown[t] = map[string]int64{}
					}
					offsets[t][p] = eo
					shown[t][fmt.Sprint(p)] = eo.Offset
					delete(processed[t], p)
				}
			}
		}
		mu.Unlock()
		if len(offsets) == 0 {
			return
		}
		var cerr error
		cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			cerr = err
			if err != nil {
				return
			}
			// Errors are per partition only.
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil && cerr == nil {
						cerr = fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, perr)
					}
				}
			}
		})
		msg := ""
		if cerr != nil {
			msg = cerr.Error()
		}
		emit("commit", map[string]any{"offsets": shown, "error": msg})
	}
	cl, err := kgo.NewClient(append(dial,
		kgo.SeedBrokers(*bootstrap),
		kgo.ClientID(*clientID),
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(*topic),
		kgo.Balancers(b),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit("assigned", map[string]any{"partitions": sorted(m)})
		}),
		kgo.OnPartitionsRevoked(commitRevoked),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit("lost", map[string]any{"partitions": sorted(m)})
		}),
	)...)
	if err != nil {
		return fmt.Errorf("consume: new client: %w", err)
	}
	emit("started", map[string]any{"client_id": *clientID})
	total := 0
	// seen holds every value read, so that a reader across a broker outage
	// can tell a record read twice from one never read.
	seen := map[string]struct{}{}
	for ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, 10)
		if ctx.Err() != nil {
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			emit("error", map[string]any{"topic": t, "partition": p, "error": err.Error()})
		})
		n := 0
		parts := map[string][]int32{}
		mu.Lock()
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if len(fp.Records) == 0 {
				return
			}
			last := fp.Records[len(fp.Records)-1]
			if processed[fp.Topic] == nil {
				processed[fp.Topic] = map[int32]kgo.EpochOffset{}
			}
			processed[fp.Topic][fp.Partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
			parts[fp.Topic] = append(parts[fp.Topic], fp.Partition)
			n += len(fp.Records)
			for _, r := range fp.Records {
				seen[string(r.Value)] = struct{}{}
			}
		})
		mu.Unlock()
		if n == 0 {
			continue
		}
		total += n
		emit("polled", map[string]any{"count": n, "total": total, "distinct": len(seen), "partitions": sorted(parts)})
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(*workMS) * time.Millisecond):
		}
	}
	// Close leaves the group; the revoke callback commits first.
	cl.Close()
	emit("closed", map[string]any{"total": total})
	return nil
}

func produce(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "", "seed broker (kproxy's address)")
	topic := fs.String("topic", "", "topic to write")
	count := fs.Int("count", 0, "records to write, spread round-robin over the partitions")
	clientID := fs.String("client-id", "franz-go-producer", "client id")
	every := fs.Duration("every", 0, "pace: one record per interval, each retried until acknowledged, with latency percentiles (broker outage, canary); 0 sends all at once")
	tlsCA := fs.String("tls-ca", "", "speak TLS to the brokers, trusting this PEM CA")
	resolve := fs.String("resolve", "", "NAME=IP or *.DOMAIN=IP: dial those hosts at IP")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dial, err := dialOpts(*tlsCA, *resolve)
	if err != nil {
		return err
	}
	if *bootstrap == "" || *topic == "" || *count <= 0 {
		return errors.New("produce: -bootstrap, -topic and -count are required")
	}
	cl, err := kgo.NewClient(append(dial,
		kgo.SeedBrokers(*bootstrap),
		kgo.ClientID(*clientID),
		kgo.DefaultProduceTopic(*topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		// Uncompressed, so every client reads it without optional codecs.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)...)
	if err != nil {
		return fmt.Errorf("produce: new client: %w", err)
	}
	defer cl.Close()
	emit("started", map[string]any{"client_id": *clientID})
	recs := make([]*kgo.Record, *count)
	for i := range recs {
		recs[i] = &kgo.Record{Value: fmt.Appendf(nil, "franz-record-%d", i)}
	}
	if *every > 0 {
		return producePaced(ctx, cl, recs, *every)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	emit("produced", map[string]any{"count": *count})
	return nil
}

// producePaced sends one record per interval, asynchronously, with kgo's
// defaults (records retried until acknowledged), and reports how many
// failed and the first error.
func producePaced(ctx context.Context, cl *kgo.Client, recs []*kgo.Record, every time.Duration) error {
	var (
		mu        sync.Mutex
		failed    int
		firstErr  string
		latencies []time.Duration
		wg        sync.WaitGroup
	)
	t := time.NewTicker(every)
	defer t.Stop()
	for _, r := range recs {
		wg.Add(1)
		sent := time.Now()
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			latencies = append(latencies, time.Since(sent))
			if err != nil {
				if failed++; failed == 1 {
					firstErr = err.Error()
				}
			}
		})
		<-t.C
	}
	wg.Wait()
	slices.Sort(latencies)
	pct := func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	emit("produced", map[string]any{"count": len(recs), "failed": failed, "error": firstErr,
		"p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": pct(1)})
	return nil
}
