package proxy

import (
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// dispatcher is the one goroutine between the traffic and the observers:
// it decodes each queued exchange, logs its group events, and calls the
// observers in order, telling DropObservers about drops before the first
// exchange queued after them. Decoding here keeps it off the traffic path.
type dispatcher struct {
	queue     <-chan queued
	dec       *decode.Decoder
	observers []Observer
	log       *zap.Logger
	stats     *counters
	// once is the proxy's: a decode failure is logged once per api and
	// version, then only counted.
	once *logOnce
	// droppers are the observers that are DropObservers; noted is how
	// many drops they were told about.
	droppers []DropObserver
	noted    uint64
}

func newDispatcher(queue <-chan queued, observers []Observer, log *zap.Logger, stats *counters, once *logOnce) *dispatcher {
	d := &dispatcher{
		queue:     queue,
		dec:       decode.NewDecoder(),
		observers: observers,
		log:       log,
		stats:     stats,
		once:      once,
	}
	for _, o := range observers {
		if do, ok := o.(DropObserver); ok {
			d.droppers = append(d.droppers, do)
		}
	}
	return d
}

// run handles exchanges until the queue is closed and empty, then reports
// the drops not reported yet. Nothing is queued or dropped once the queue
// is closed: every connection has ended.
func (d *dispatcher) run() {
	for q := range d.queue {
		d.noteDrops(q.drops)
		d.handle(q.x)
		d.stats.queuedBytes.Add(-exchangeBytes(q.x))
	}
	d.noteDrops(d.stats.observerDrops.Load())
}

// noteDrops tells the DropObservers about the drops up to the total upTo
// that they were not told about yet.
func (d *dispatcher) noteDrops(upTo uint64) {
	if upTo <= d.noted {
		return
	}
	n := upTo - d.noted
	d.noted = upTo
	at := time.Now()
	for _, o := range d.droppers {
		o.Dropped(n, at)
	}
}

func (d *dispatcher) handle(x *decode.Exchange) {
	events, err := d.dec.Decode(x)
	if err != nil {
		d.stats.malformedFrames.Add(1)
		if d.once.first("decode", x.APIKey, x.APIVersion) {
			d.log.Warn("exchange did not decode; it was forwarded untouched (logged once per api and version)",
				zap.String("api", decode.APIName(x.APIKey)), zap.Int16("api_version", x.APIVersion),
				zap.String("client_addr", x.ClientAddr), zap.Int32("broker_id", x.BrokerID), zap.Error(err))
		}
	}
	for i := range events {
		d.logEvent(&events[i])
	}
	for _, o := range d.observers {
		o.Observe(x, events)
	}
}

// logEvent writes one line per group event.
func (d *dispatcher) logEvent(e *decode.Event) {
	if !decode.GroupAPI(e.APIKey) {
		return
	}
	ce := d.log.Check(zapcore.InfoLevel, "group exchange")
	if ce == nil {
		return
	}
	f := e.Summary()
	ce.Write(
		zap.String("group", e.Group),
		zap.String("member_id", f.Member),
		zap.String("instance_id", f.Instance),
		zap.Int32("generation", f.Generation),
		zap.String("api", decode.APIName(e.APIKey)),
		zap.Int16("api_version", e.APIVersion),
		zap.String("error", decode.ErrorName(f.ErrorCode)),
		zap.Duration("latency", e.Latency()),
		zap.String("client_id", e.ClientID),
		zap.String("client_addr", e.ClientAddr),
		zap.Int32("broker_id", e.BrokerID),
	)
}
