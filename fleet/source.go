package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// SourceConfig says which topic a Source reads and how.
type SourceConfig struct {
	// Topic is the events topic. Required.
	Topic string
	// Client are the options of the consuming client: seed brokers, TLS,
	// SASL.
	Client []kgo.Opt
	// Since, when set, starts reading at the records stamped Since minus
	// the merge's Hold and MaxSkew (the pipeline's own window cuts the
	// rest); zero starts at the beginning of the topic.
	Since time.Time
	// Follow keeps reading as records come (serve --fleet-topic) until
	// Close; otherwise reading ends at the end the topic had when the
	// Source was opened (replay --from-topic).
	Follow bool
	// Merge configures the merge.
	Merge MergeConfig
	// Log receives warnings: records that are not kproxy's, fetch errors.
	// Nil logs nothing.
	Log *zap.Logger
}

// SourceStats counts what a Source read.
type SourceStats struct {
	MergeStats
	// Records read from the topic, markers included.
	Records uint64
	// Foreign records are not of this format; they were skipped.
	Foreign uint64
}

// Source is a pipeline.Source of the exchanges of every instance
// publishing to the events topic, merged (see Merger). It is read by one
// goroutine (the pipeline's); Stats and Close may be called from others.
type Source struct {
	cfg  SourceConfig
	cl   *kgo.Client
	m    *Merger
	end  map[int32]int64 // !Follow: where each partition ends
	done bool
	n    int // exchanges handed out
	// tickAt is the time of the last tick Next returned (see Tick).
	tickAt time.Time
	paused map[int32]bool
	closed atomic.Bool
	// woken makes Next return at once (Wake), and cancelPoll stops the
	// poll Next waits in, nil when none.
	woken      chan struct{}
	pollMu     sync.Mutex
	cancelPoll context.CancelFunc

	records atomic.Uint64
	foreign atomic.Uint64
	stats   atomic.Pointer[MergeStats] // published by the reading goroutine
	log     *zap.Logger
}

// TakeBlind returns the groups the merge found blind since the last call
// (see Merger.TakeBlind).
func (s *Source) TakeBlind() []decode.Blind { return s.m.TakeBlind() }

// OpenSource checks that the topic exists, notes where each partition
// ends, and starts consuming it.
func OpenSource(ctx context.Context, cfg SourceConfig) (*Source, error) {
	if cfg.Topic == "" {
		return nil, errors.New("fleet: source needs a topic")
	}
	log := cfg.Log
	if log == nil {
		log = zap.NewNop()
	}
	s := &Source{cfg: cfg, m: NewMerger(cfg.Merge), woken: make(chan struct{}, 1), log: log.With(zap.String("events_topic", cfg.Topic))}
	admin, err := kgo.NewClient(cfg.Client...)
	if err != nil {
		return nil, fmt.Errorf("fleet: events client: %w", err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	ends, err := adm.ListEndOffsets(ctx, cfg.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: topic %s: %w", cfg.Topic, err)
	}
	if _, ok := ends[cfg.Topic]; !ok {
		return nil, fmt.Errorf("fleet: topic %s does not exist", cfg.Topic)
	}
	var starts kadm.ListedOffsets
	start := kgo.NewOffset().AtStart()
	if !cfg.Since.IsZero() {
		m := s.m.cfg
		at := cfg.Since.Add(-m.Hold - m.MaxSkew)
		start = kgo.NewOffset().AfterMilli(at.UnixMilli())
		starts, err = adm.ListOffsetsAfterMilli(ctx, at.UnixMilli(), cfg.Topic)
	} else {
		starts, err = adm.ListStartOffsets(ctx, cfg.Topic)
	}
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: topic %s: %w", cfg.Topic, err)
	}
	s.end = map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		from := o.Offset
		if st, ok := starts.Lookup(cfg.Topic, o.Partition); ok {
			from = st.Offset
		}
		if from < o.Offset {
			s.m.Expect(o.Partition)
			s.end[o.Partition] = o.Offset
		}
	})
	if !cfg.Follow && len(s.end) == 0 {
		s.done = true
		return s, nil
	}
	// Smaller fetches than kgo's default of 1 MiB a partition: a fetch
	// reads a sparse partition seconds ahead of a dense one, and what it
	// reads ahead waits in the merge (docs/fleet.md). cfg.Client may
	// override it.
	opts := []kgo.Opt{kgo.FetchMaxPartitionBytes(fetchPartitionBytes)}
	opts = append(opts, cfg.Client...)
	opts = append(opts, kgo.ConsumeTopics(cfg.Topic), kgo.ConsumeResetOffset(start))
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		return nil, fmt.Errorf("fleet: events client: %w", err)
	}
	return s, nil
}

// fetchPartitionBytes is the most a fetch reads of one partition.
const fetchPartitionBytes = 256 << 10

// Next returns the next exchange of the merged stream, and how many were
// lost before it. It blocks while nothing is ready; when a read of the
// topic moved the merge's time on without releasing an exchange (the
// instances' markers, every second), it returns a tick: a nil exchange
// and a nil error (see Tick). At the end (the topic's end when not
// following, Close otherwise) it hands out what is pending and returns
// io.EOF.
func (s *Source) Next() (*decode.Exchange, uint64, error) {
	for polled := false; ; polled = true {
		x, dropped, ok := s.m.Next(s.done)
		if ok {
			if s.n++; s.n%statsEvery == 0 {
				s.publish()
			}
			return x, dropped, nil
		}
		s.publish() // before waiting for records, and at the end
		if s.done {
			return nil, s.m.Dropped(), io.EOF
		}
		if at := s.m.Ready(); polled && at.After(s.tickAt) {
			s.tickAt = at
			return nil, 0, nil
		}
		select {
		case <-s.woken:
			return nil, 0, nil // Tick stays as it was: not a tick
		default:
		}
		if err := s.poll(); err != nil {
			return nil, s.m.Dropped(), err
		}
	}
}

// Wake makes Next, waiting for records, return at once with a nil
// exchange and the time of the last tick (pipeline's Waker): the pipeline
// then runs what readers asked of it. Records already fetched stay for
// the next poll.
func (s *Source) Wake() {
	select {
	case s.woken <- struct{}{}:
	default:
	}
	s.pollMu.Lock()
	if s.cancelPoll != nil {
		s.cancelPoll()
	}
	s.pollMu.Unlock()
}

// Tick is the time of the tick Next last returned: the merged stream's
// time before which every exchange has been handed out, as far as the
// merge can tell (Merger.Ready).
func (s *Source) Tick() time.Time { return s.tickAt }

// statsEvery is how many exchanges Next hands out between two updates of
// what Stats returns (and whenever it waits for records): copying the
// merge's counters for every exchange would cost more than the merge.
const statsEvery = 1024

// publish makes the merge's counters visible to Stats.
func (s *Source) publish() {
	st := s.m.Stats()
	s.stats.Store(&st)
}

// pace pauses fetching the partitions read ahead of the merge (see
// Merger.Ahead) and resumes the others: uneven partitions would otherwise
// be read at the pace of the fastest, and what the merge cannot hand out
// yet would pile up in memory. The partition the merge waits for is never
// paused, so reading goes on.
func (s *Source) pace() {
	var pause, resume []int32
	for _, p := range s.m.Partitions() {
		switch ahead := s.m.Ahead(p); {
		case ahead && !s.paused[p]:
			pause = append(pause, p)
		case !ahead && s.paused[p]:
			resume = append(resume, p)
		}
	}
	if s.paused == nil {
		s.paused = map[int32]bool{}
	}
	for _, p := range pause {
		s.paused[p] = true
	}
	for _, p := range resume {
		delete(s.paused, p)
	}
	if len(pause) > 0 {
		s.cl.PauseFetchPartitions(map[string][]int32{s.cfg.Topic: pause})
	}
	if len(resume) > 0 {
		s.cl.ResumeFetchPartitions(map[string][]int32{s.cfg.Topic: resume})
	}
}

// poll reads one batch of fetches into the merge.
func (s *Source) poll() error {
	s.pace()
	ctx, cancel := context.WithCancel(context.Background())
	s.pollMu.Lock()
	s.cancelPoll = cancel
	s.pollMu.Unlock()
	if len(s.woken) > 0 {
		cancel() // woken before the poll could be stopped
	}
	fs := s.cl.PollFetches(ctx)
	s.pollMu.Lock()
	s.cancelPoll = nil
	s.pollMu.Unlock()
	cancel()
	if fs.IsClientClosed() || s.closed.Load() {
		s.done = true
		return nil
	}
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.Canceled) {
			return
		}
		s.log.Warn("events topic: fetch error", zap.Int32("partition", p), zap.Error(err))
		if !s.cfg.Follow && ferr == nil {
			ferr = fmt.Errorf("fleet: read %s[%d]: %w", t, p, err)
		}
	})
	if ferr != nil {
		return ferr
	}
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		for _, r := range p.Records {
			s.records.Add(1)
			rec, err := Decode(r)
			if err != nil {
				if s.foreign.Add(1) == 1 {
					s.log.Warn("events topic holds records kproxy did not write; skipping them (counted)", zap.Error(err))
				}
				continue
			}
			s.m.Add(rec, p.Partition)
		}
		next := p.HighWatermark
		if n := len(p.Records); n > 0 {
			next = p.Records[n-1].Offset + 1
		}
		if s.cfg.Follow {
			s.m.CaughtUp(p.Partition, next >= p.HighWatermark)
			return
		}
		if end, ok := s.end[p.Partition]; ok && next >= end {
			s.m.CaughtUp(p.Partition, true)
			delete(s.end, p.Partition)
		}
	})
	if !s.cfg.Follow && len(s.end) == 0 {
		s.done = true
	}
	return nil
}

// Stats returns the counters so far; safe from any goroutine.
func (s *Source) Stats() SourceStats {
	st := SourceStats{Records: s.records.Load(), Foreign: s.foreign.Load()}
	if m := s.stats.Load(); m != nil {
		st.MergeStats = *m
	}
	return st
}

// Close stops reading: Next hands out what is pending, then io.EOF. Safe
// from any goroutine, once.
func (s *Source) Close() {
	s.closed.Store(true)
	if s.cl != nil {
		s.cl.Close()
	}
}
