package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// client makes a client of the mode with opts.
func (m mode) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(m.seed)}, append(m.opts, opts...)...)...)
}

// produce writes n records of size bytes, snappy-compressed unless
// noCompression, and returns how long it took from
// the first record to the last acknowledgement.
func produce(ctx context.Context, m mode, topic string, n, size int, noCompression bool) (time.Duration, error) {
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(5 * time.Millisecond), kgo.MaxBufferedRecords(10000)}
	if noCompression {
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	cl, err := m.client(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	// Create the topic and warm the connections before the clock starts.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
		return 0, fmt.Errorf("warm up: %w", err)
	}
	value := make([]byte, size)
	errs := make(chan error, 1)
	start := time.Now()
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	select {
	case err := <-errs:
		return 0, fmt.Errorf("produce: %w", err)
	default:
	}
	return elapsed, nil
}

// fetch consumes n records (plus the warm-up record) of topic from the start
// and returns how long it took.
func fetch(ctx context.Context, m mode, topic string, n int) (time.Duration, error) {
	cl, err := m.client(kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	got := 0
	for got < n+1 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return 0, fmt.Errorf("fetch after %d records: %w", got, err)
		}
		got += fs.NumRecords()
	}
	return time.Since(start), nil
}

// produceLatency sends n single-record produce requests one after the other
// and returns each round trip.
func produceLatency(ctx context.Context, m mode, topic string, n int) ([]time.Duration, error) {
	cl, err := m.client(kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rec := func() *kgo.Record { return &kgo.Record{Value: []byte("latency-probe")} }
	if err := cl.ProduceSync(ctx, rec()).FirstErr(); err != nil {
		return nil, fmt.Errorf("warm up: %w", err)
	}
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := cl.ProduceSync(ctx, rec()).FirstErr(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// deleteTopics deletes topics through the mode.
func deleteTopics(ctx context.Context, m mode, topics ...string) error {
	cl, err := m.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fmt.Errorf("delete topics: %w", err)
	}
	return nil
}

// fillGroups runs n consumer groups of one member on topic, gens times
// each: every run joins (a new generation), commits and leaves, so that a
// kproxy in front keeps n groups of gens generations in its timeline.
// It runs up to 32 groups at a time.
func fillGroups(ctx context.Context, m mode, topic string, n, gens int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cl, err := m.client(kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		return err
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("fill")}).FirstErr()
	cl.Close()
	if err != nil {
		return fmt.Errorf("fill: create %s: %w", topic, err)
	}
	sem := make(chan struct{}, 32)
	errs := make(chan error, n)
	for g := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- joinAndLeave(ctx, m, topic, fmt.Sprintf("%s-group-%d", topic, g), gens)
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// joinAndLeave has a consumer of group join, take its partitions, commit
// and leave, gens times.
func joinAndLeave(ctx context.Context, m mode, topic, group string, gens int) error {
	for gen := range gens {
		assigned := make(chan struct{}, 1)
		cl, err := m.client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
				select {
				case assigned <- struct{}{}:
				default:
				}
			}))
		if err != nil {
			return err
		}
		go func() { // polls until Close
			for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
			}
		}()
		select {
		case <-assigned:
		case <-ctx.Done():
			cl.Close()
			return fmt.Errorf("fill: %s generation %d: no assignment: %w", group, gen, ctx.Err())
		}
		err = cl.CommitUncommittedOffsets(ctx)
		cl.Close() // leaves the group
		if err != nil {
			return fmt.Errorf("fill: %s commit: %w", group, err)
		}
	}
	return nil
}
