package proxy

import (
	"github.com/kproxy-dev/kproxy/decode"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// dispatcher is the one goroutine between the traffic and the observers:
// it decodes each queued exchange, logs its group events, and calls the
// observers in order. Decoding here keeps it off the traffic path.
type dispatcher struct {
	queue     <-chan *decode.Exchange
	dec       *decode.Decoder
	observers []Observer
	log       *zap.Logger
	stats     *counters
	// failed holds the (api, version) pairs whose decode failure was
	// logged: each is logged once, then only counted.
	failed map[[2]int16]bool
}

func newDispatcher(queue <-chan *decode.Exchange, observers []Observer, log *zap.Logger, stats *counters) *dispatcher {
	return &dispatcher{
		queue:     queue,
		dec:       decode.NewDecoder(),
		observers: observers,
		log:       log,
		stats:     stats,
		failed:    make(map[[2]int16]bool),
	}
}

// run handles exchanges until the queue is closed and empty.
func (d *dispatcher) run() {
	for x := range d.queue {
		d.handle(x)
		d.stats.queuedBytes.Add(-exchangeBytes(x))
	}
}

func (d *dispatcher) handle(x *decode.Exchange) {
	events, err := d.dec.Decode(x)
	if err != nil {
		d.stats.malformedFrames.Add(1)
		k := [2]int16{x.APIKey, x.APIVersion}
		if !d.failed[k] {
			d.failed[k] = true
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
