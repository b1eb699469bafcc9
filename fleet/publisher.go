package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/journal"
)

// Defaults of PublisherConfig.
const (
	// DefaultMaxBufferedRecords bounds the records waiting to be
	// acknowledged: about 30 s of a busy proxy's group traffic.
	DefaultMaxBufferedRecords = 10000
	// DefaultMaxBufferedBytes bounds their bytes.
	DefaultMaxBufferedBytes = 32 << 20
	// DefaultDeliveryTimeout is how long a record may wait for the cluster
	// before it is given up, counted and left as a hole in the sequence.
	DefaultDeliveryTimeout = 30 * time.Second
	// DefaultLinger is how long the producer waits to fill a batch.
	DefaultLinger = 20 * time.Millisecond
	// MarkerInterval is how often each run sends a marker.
	MarkerInterval = time.Second
	// markerSlack is room kept for markers beyond the buffer's bounds, so
	// that an instance whose records are dropped still says it is alive.
	markerSlack = 64
	// markerBytes bounds one marker's size as the client counts it: key,
	// value and headers, with an instance id of up to 1 KiB.
	markerBytes = 4 << 10
)

// PublisherConfig says where and how a Publisher publishes.
type PublisherConfig struct {
	// Topic is the events topic. Required.
	Topic string
	// Instance is the instance id put in every record. Required.
	Instance string
	// Client are the options of the producing client: seed brokers, TLS,
	// SASL. The Publisher adds its producer settings.
	Client []kgo.Opt
	// Topic creation, when the topic is missing: Partitions (0 means
	// DefaultPartitions) and Retention (0 means the cluster's default).
	Partitions int32
	Retention  time.Duration
	// MaxBufferedRecords and MaxBufferedBytes bound what waits for the
	// cluster; past them records are dropped and counted. 0 means the
	// defaults.
	MaxBufferedRecords int
	MaxBufferedBytes   int
	// DeliveryTimeout: 0 means DefaultDeliveryTimeout.
	DeliveryTimeout time.Duration
	// Now is the instance's clock for markers and gaps; nil means
	// time.Now.
	Now func() time.Time
	// Skew is added to every time the Publisher writes (exchanges, gaps,
	// markers): it simulates a clock that is off, for tests. 0 in use.
	Skew time.Duration
}

// PublisherStats counts what a Publisher did.
type PublisherStats struct {
	// Published records acknowledged by the cluster (exchanges and gaps).
	Published uint64
	// Dropped exchanges: not accepted by the full buffer, lost by the
	// pipeline before they reached the Publisher, or not acknowledged in
	// time.
	Dropped uint64
	// Redacted SASL exchanges never published.
	Redacted uint64
	// TopicReady is set once the topic is known to exist.
	TopicReady bool
}

// Publisher publishes the exchanges an instance observes to the events
// topic. It is a consumer of the pipeline (AddDecoded, Dropped), called
// from the pipeline's goroutine; it never blocks it: the client's buffer
// is bounded and what does not fit is dropped, counted and published as a
// gap record once there is room. Run sends the markers and creates the
// topic; Close sends the last marker and flushes.
type Publisher struct {
	cfg     PublisherConfig
	cl      *kgo.Client
	log     *zap.Logger
	headers []kgo.RecordHeader

	// mu guards the run's next sequence number and the gap to publish
	// before the next record: the pipeline's goroutine (AddDecoded,
	// Dropped) and Run's markers both publish.
	mu      sync.Mutex
	seq     uint64
	pending uint64 // exchanges lost since the last record
	gapAt   time.Time

	published atomic.Uint64
	dropped   atomic.Uint64
	redacted  atomic.Uint64
	ready     atomic.Bool
	lastErr   atomic.Pointer[string]
}

// NewPublisher creates the producing client (it connects lazily) and
// returns a Publisher; Run must run for markers and topic creation.
func NewPublisher(cfg PublisherConfig, log *zap.Logger) (*Publisher, error) {
	if cfg.Topic == "" || cfg.Instance == "" {
		return nil, errors.New("fleet: publisher needs a topic and an instance id")
	}
	if cfg.MaxBufferedRecords <= 0 {
		cfg.MaxBufferedRecords = DefaultMaxBufferedRecords
	}
	if cfg.MaxBufferedBytes <= 0 {
		cfg.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if cfg.DeliveryTimeout <= 0 {
		cfg.DeliveryTimeout = DefaultDeliveryTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	opts := append([]kgo.Opt{}, cfg.Client...)
	opts = append(opts,
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.ProducerBatchCompression(kgo.ZstdCompression(), kgo.NoCompression()),
		// Above the Publisher's own bounds (roomFor): markers may go past them.
		kgo.MaxBufferedRecords(cfg.MaxBufferedRecords+markerSlack),
		kgo.MaxBufferedBytes(cfg.MaxBufferedBytes+markerSlack*markerBytes),
		kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout),
		kgo.ProducerLinger(DefaultLinger),
		// Idempotent (kgo's default): retries neither duplicate nor reorder
		// the records of a partition.
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("fleet: events client: %w", err)
	}
	var run [8]byte
	rand.Read(run[:]) //nolint:errcheck // crypto/rand never fails
	p := &Publisher{cfg: cfg, cl: cl, log: log.With(zap.String("events_topic", cfg.Topic))}
	p.headers = headers(cfg.Instance, hex.EncodeToString(run[:]))
	return p, nil
}

// now is the instance's clock, skewed when a test asks.
func (p *Publisher) now() time.Time { return p.cfg.Now().Add(p.cfg.Skew) }

// AddDecoded publishes d's exchange, keyed by its group. SASL exchanges are
// never published. The exchange is encoded at once: the Publisher keeps
// nothing of d.
func (p *Publisher) AddDecoded(d *decode.Decoded) {
	x := d.X
	if x == nil {
		return
	}
	if journal.IsSASL(x) {
		p.redacted.Add(1)
		return
	}
	if p.cfg.Skew != 0 {
		c := *x
		c.RequestAt = shift(c.RequestAt, p.cfg.Skew)
		c.ResponseAt = shift(c.ResponseAt, p.cfg.Skew)
		x = &c
	}
	key := recordKey(p.cfg.Instance, d.Events)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushGapLocked()
	if p.pending > 0 { // the buffer is still full: this one is lost too
		p.noteLostLocked(1, x.CompletedAt())
		return
	}
	r := exchangeRecord(p.headers, p.seq, key, x)
	p.tryLocked(r, 1, x.CompletedAt())
}

func shift(t time.Time, d time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(d)
}

// Dropped notes n exchanges lost before they reached the Publisher (the
// proxy's queue was full): a gap record takes their place.
func (p *Publisher) Dropped(n uint64, at time.Time) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteLostLocked(n, shift(at, p.cfg.Skew))
	p.flushGapLocked()
}

// noteLostLocked counts n exchanges lost at at, to be published as a gap.
func (p *Publisher) noteLostLocked(n uint64, at time.Time) {
	p.dropped.Add(n)
	if p.pending == 0 {
		p.gapAt = at
	}
	p.pending += n
}

// flushGapLocked publishes the pending gap when the buffer takes it.
func (p *Publisher) flushGapLocked() {
	if p.pending == 0 {
		return
	}
	r := gapRecord(p.headers, p.seq, p.cfg.Instance, p.gapAt, p.pending)
	if p.tryLocked(r, 0, time.Time{}) {
		p.pending = 0
	}
}

// tryLocked hands r to the client without waiting, when the buffer has
// room for it; a record that does not fit takes no sequence number, and
// lost counts the exchanges it carries (1, or 0 for a gap, which stays
// pending). It reports whether the buffer took r. The Publisher is the
// client's only producer and calls this under mu, so the room checked is
// the room there is; the client's own limits are set above these so it
// never refuses (its refusal would come later, on another goroutine).
func (p *Publisher) tryLocked(r *kgo.Record, lost uint64, at time.Time) bool {
	if !p.roomFor(r) {
		if lost > 0 {
			p.noteLostLocked(lost, at)
		}
		return false
	}
	p.cl.TryProduce(context.Background(), r, func(_ *kgo.Record, err error) {
		if err == nil {
			p.published.Add(1)
			return
		}
		// Accepted, then given up (delivery timeout, the topic refused):
		// a hole in the sequence, which the reader counts.
		p.dropped.Add(lost)
		msg := err.Error()
		p.lastErr.Store(&msg)
	})
	p.seq++
	return true
}

// roomFor reports whether the buffer has room for r within the
// configured bounds.
func (p *Publisher) roomFor(r *kgo.Record) bool {
	size := int64(len(r.Key) + len(r.Value))
	for _, h := range r.Headers {
		size += int64(len(h.Key) + len(h.Value))
	}
	return p.cl.BufferedProduceRecords() < int64(p.cfg.MaxBufferedRecords) &&
		p.cl.BufferedProduceBytes()+size <= int64(p.cfg.MaxBufferedBytes)
}

// Run creates the topic when it is missing, retrying while the cluster
// cannot be reached, and sends a marker every MarkerInterval, until ctx is
// done.
func (p *Publisher) Run(ctx context.Context) {
	go p.ensureTopic(ctx) // ends with ctx or once the topic exists
	t := time.NewTicker(MarkerInterval)
	defer t.Stop()
	p.marker(false)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.marker(false)
		}
	}
}

// marker sends a marker, or drops it when the buffer is full (the next
// one says the same).
func (p *Publisher) marker(stopping bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushGapLocked()
	if p.cl.BufferedProduceRecords() >= int64(p.cfg.MaxBufferedRecords+markerSlack) {
		return
	}
	r := markerRecord(p.headers, p.cfg.Instance, p.now(), p.seq, stopping)
	p.cl.TryProduce(context.Background(), r, nil)
}

// ensureTopic creates the topic unless it exists, retrying every few
// seconds until it does or ctx is done.
func (p *Publisher) ensureTopic(ctx context.Context) {
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		err := EnsureTopic(ctx, p.cl, p.cfg.Topic, p.cfg.Partitions, p.cfg.Retention)
		if err == nil {
			p.ready.Store(true)
			return
		}
		p.log.Warn("events topic not ready; retrying (exchanges are dropped and counted meanwhile)",
			zap.Error(err), zap.Duration("retry_in", wait))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Stats returns the counters so far. Safe to call from any goroutine.
func (p *Publisher) Stats() PublisherStats {
	return PublisherStats{
		Published:  p.published.Load(),
		Dropped:    p.dropped.Load(),
		Redacted:   p.redacted.Load(),
		TopicReady: p.ready.Load(),
	}
}

// Close sends the run's last marker, waits up to timeout for what is
// buffered to be acknowledged (the rest is lost and counted), and closes
// the client. Run must have ended, and the pipeline too.
func (p *Publisher) Close(timeout time.Duration) {
	p.marker(true)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		p.log.Warn("events topic: records still unacknowledged at shutdown were lost", zap.Error(err))
		// Fail them now, counted by their promises, before the counts
		// are read.
		p.cl.AbortBufferedRecords(context.Background()) //nolint:errcheck // never fails with this context
	}
	p.cl.Close()
	st := p.Stats()
	fields := []zap.Field{zap.Uint64("published", st.Published), zap.Uint64("dropped", st.Dropped)}
	if e := p.lastErr.Load(); e != nil {
		fields = append(fields, zap.String("last_error", *e))
	}
	if st.Dropped > 0 {
		p.log.Warn("events topic closed; exchanges were dropped (the fleet's story has gaps there)", fields...)
		return
	}
	p.log.Info("events topic closed", fields...)
}
