// Package demo drives the seed scenario kproxy grew from: group
// test_group_1 on topic round_topic (3 partitions); consumer A (range
// assignor, manual commits, commits what it processed when partitions are
// revoked) consumes alone, then consumer B, slower, joins. The group must
// wait for A to come back to poll before the rebalance completes; after it
// A owns partitions 0 and 1 and B owns 2. `kproxy demo` and the replay and
// serve tests of cmd/kproxy run it through kproxy.
package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group and Topic are the seed scenario's names; Partitions is how many
// partitions Topic has.
const (
	Group      = "test_group_1"
	Topic      = "round_topic"
	Partitions = 3
)

// Options tune the scenario. Zero values take the defaults documented on
// each field.
type Options struct {
	// WorkA and WorkB are how long each consumer "processes" one poll's
	// records. Defaults 1s and 2s.
	WorkA, WorkB time.Duration
	// BJoinsAfter is when consumer B starts, counted from A's start.
	// Default 4.5s: in the middle of one of A's batches, so the group
	// visibly waits for A.
	BJoinsAfter time.Duration
	// BothFor is how long both consumers run together before they leave,
	// B first. Default 8s.
	BothFor time.Duration
	// SeedB, when set, is the address consumer B bootstraps from instead
	// of Run's seed: a second kproxy in front of the same cluster.
	SeedB string
	// Narrate, when set, receives one line per thing a consumer does, as
	// the consumer sees it (kproxy's timeline tells the same from the wire).
	Narrate func(line string)
}

func (o Options) withDefaults() Options {
	if o.WorkA == 0 {
		o.WorkA = time.Second
	}
	if o.WorkB == 0 {
		o.WorkB = 2 * time.Second
	}
	if o.BJoinsAfter == 0 {
		o.BJoinsAfter = 4500 * time.Millisecond
	}
	if o.BothFor == 0 {
		o.BothFor = 8 * time.Second
	}
	if o.Narrate == nil {
		o.Narrate = func(string) {}
	}
	return o
}

// Run plays the scenario against the cluster reachable at seed (kproxy's
// address, in the demo) and returns when both consumers have left the
// group, or ctx is done. The topic must exist.
func Run(ctx context.Context, seed string, opts Options) error {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Add(1)
	go func() { // the producer ends when the consumers are done
		defer wg.Done()
		errs <- produce(ctx, seed)
	}()

	a := &consumer{name: "consumer-A", work: opts.WorkA, narrate: opts.Narrate}
	b := &consumer{name: "consumer-B", work: opts.WorkB, narrate: opts.Narrate}
	consumersDone := make(chan struct{})
	go func() {
		defer close(consumersDone)
		var cwg sync.WaitGroup
		cwg.Add(2)
		go func() {
			defer cwg.Done()
			errs <- a.run(ctx, seed, opts.BJoinsAfter+opts.BothFor+opts.WorkB)
		}()
		go func() {
			defer cwg.Done()
			if !sleep(ctx, opts.BJoinsAfter) {
				return
			}
			seedB := seed
			if opts.SeedB != "" {
				seedB = opts.SeedB
			}
			errs <- b.run(ctx, seedB, opts.BothFor)
		}()
		cwg.Wait()
	}()
	select {
	case <-consumersDone:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}

// produce writes one small record every 20ms, round robin over the
// partitions, until ctx is done, so the consumers always have work.
func produce(ctx context.Context, seed string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ClientID("demo-producer"),
		kgo.DefaultProduceTopic(Topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return fmt.Errorf("demo: producer: %w", err)
	}
	defer cl.Close()
	for i := 0; ; i++ {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "record-%d", i)}, nil)
		if !sleep(ctx, 20*time.Millisecond) {
			return nil
		}
	}
}

// consumer is one member of the seed scenario's group.
type consumer struct {
	name    string
	work    time.Duration
	narrate func(string)

	mu        sync.Mutex
	processed map[int32]int64 // partition -> next offset to consume
}

// run consumes for about d, then leaves the group.
func (c *consumer) run(ctx context.Context, seed string, d time.Duration) error {
	c.processed = make(map[int32]int64)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seed),
		kgo.ClientID(c.name), // the range assignor orders members by id: A before B
		kgo.ConsumerGroup(Group),
		kgo.ConsumeTopics(Topic),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.DisableAutoCommit(),
		// The rebalance waits until this member comes back to poll, as a
		// Java or kafka-python consumer does.
		kgo.BlockRebalanceOnPoll(),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			c.narrate(fmt.Sprintf("%s assigned %v", c.name, assigned[Topic]))
		}),
		kgo.OnPartitionsRevoked(c.onRevoked),
	)
	if err != nil {
		return fmt.Errorf("demo: %s: %w", c.name, err)
	}
	c.narrate(c.name + " started")
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollRecords(pollCtx, 500)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			c.mu.Lock()
			c.processed[r.Partition] = r.Offset + 1
			c.mu.Unlock()
			n++
		})
		if n > 0 {
			sleep(ctx, c.work) // "processing"
		}
		cl.AllowRebalance()
	}
	c.narrate(c.name + " leaving the group")
	cl.Close() // leaves the group, after the revocation callback commits
	return nil
}

// onRevoked commits the offsets this consumer processed on the revoked
// partitions, so the next owner does not process those records again.
func (c *consumer) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	c.mu.Lock()
	offsets := make(map[int32]kgo.EpochOffset)
	for _, p := range revoked[Topic] {
		if o, ok := c.processed[p]; ok {
			offsets[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
			delete(c.processed, p)
		}
	}
	c.mu.Unlock()
	if len(offsets) == 0 {
		return
	}
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{Topic: offsets},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
			result := "ok"
			if err != nil {
				result = err.Error()
			}
			c.narrate(fmt.Sprintf("%s committed %s on revocation: %s", c.name, formatOffsets(offsets), result))
		})
}

// formatOffsets renders offsets as round_topic[0]=12 [1]=9.
func formatOffsets(offsets map[int32]kgo.EpochOffset) string {
	out := Topic
	for p := int32(0); p < Partitions; p++ {
		if o, ok := offsets[p]; ok {
			out += fmt.Sprintf("[%d]=%d ", p, o.Offset)
		}
	}
	return strings.TrimSpace(out)
}

// sleep waits d or until ctx is done, and reports whether it slept fully.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
