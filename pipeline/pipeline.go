// Package pipeline is kproxy's one path from exchanges to stories. A
// Source hands out raw exchanges (the proxy's queue, journal readers); the
// pipeline decodes each with the one Decoder it owns, hands the exchange to
// the consumers of exchanges (the journal writer), logs its group events,
// hands the events, a batch at a time, to the consumers of events (the
// timeline engine), and each exchange with its events and its decoded Fetch
// or ApiVersions request to the consumers of decoded exchanges (the
// diagnosis). serve, replay, diagnose, journal inspect, the demo and the
// tests all run it.
//
// Strings that consumers keep long are interned here, where events enter,
// so that consumers work with plain values and still share one copy of
// each: right after decoding, the topic names of OffsetCommit and
// OffsetFetch events, and the names JoinGroup, SyncGroup and LeaveGroup
// events carry (group, member and instance ids, protocols, racks,
// subscribed and assigned topics), are replaced with shared copies (intern.go), before
// any consumer or Inspect sees the events.
//
// A Pipeline is run by one goroutine, which owns the decoder and calls
// every consumer: nothing in it is locked, and consumers are called in
// order, never concurrently. Only Stats may be called from elsewhere.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// ExchangeConsumer receives every raw exchange the source hands out, in
// order, decoded or not, and learns of the exchanges the source lost
// before they reached the pipeline (the proxy's full queue). The journal
// writer is one: it notes each loss as a gap record.
type ExchangeConsumer interface {
	// Append takes one exchange. It may keep x only when the source does
	// not reuse exchanges (the proxy's queue never does; journal sources
	// do).
	Append(x *decode.Exchange)
	// Dropped says that n exchanges were lost before the next one, as
	// noticed at time at.
	Dropped(n uint64, at time.Time)
}

// DropConsumer learns of the exchanges a source lost before they reached
// the pipeline: n of them, as noticed at time at.
type DropConsumer interface {
	Dropped(n uint64, at time.Time)
}

// EventConsumer receives the group events decoded from the exchanges, in
// the order the exchanges completed, several exchanges' events at a time
// (Config.Batch). The timeline engine is one. It must not keep the slice or
// the events' addresses: the pipeline decodes the next exchanges into the
// same slice.
type EventConsumer interface {
	AddEvents(events []decode.Event)
}

// Config says what a Pipeline feeds. The zero value decodes and counts,
// and feeds nothing.
type Config struct {
	// Log receives one line per group event (log.go says at which level)
	// and a warning the first time each API version fails to decode. Nil
	// logs nothing.
	Log *zap.Logger
	// Exchanges receive each exchange, in this order, before its events
	// go anywhere: a journal has an exchange queued before the timeline
	// tells its story.
	Exchanges []ExchangeConsumer
	// Events receive the events, in this order.
	Events []EventConsumer
	// Decoded receive each exchange with its events and its Fetch or
	// ApiVersions request decoded (see Decoded), in this order, once
	// Events have had the exchange's events (so that what the timeline
	// told of them comes first). Setting any hands Events each exchange's
	// events at once, whatever Batch says. Exchanges outside [Since,
	// Until] are not handed to them.
	Decoded []DecodedConsumer
	// Blind learn what a BlindSource is blind to (blind.go).
	Blind []BlindConsumer
	// Ticks learn the ticks of a TickSource (source.go), once the events
	// before them have been handed on.
	Ticks []TickConsumer
	// Drops learn, as Exchanges do, of the exchanges the source lost
	// before they reached the pipeline: for consumers of Decoded that
	// note losses too (the events topic's publisher).
	Drops []DropConsumer
	// Inspect, when set, is called with each exchange, the events
	// decoded from it and the decode error, before the window and the
	// consumers: for tools that show exchanges one by one (journal
	// inspect). It must keep neither the exchange nor the events.
	Inspect func(x *decode.Exchange, events []decode.Event, err error)
	// Batch is how many events at least are gathered (whole exchanges'
	// events) before they are handed to Events; the rest are handed on
	// when the source ends. A consumer of a batch loads what its events
	// read all together, so the cache misses of different events overlap:
	// replay uses 32. Default 1: each exchange's events as soon as it is
	// read, as a live proxy wants.
	Batch int
	// Owner, when set, runs the functions readers queue to it on Run's
	// goroutine, between exchanges (see Owner).
	Owner *Owner
	// Since and Until, when not zero, keep from Events the events of
	// exchanges completed outside [Since, Until]. Every exchange is still
	// decoded (the decoder remembers protocol types from JoinGroups for
	// older SyncGroups) and handed to Exchanges and Inspect. Reading
	// stops at the first exchange completed UntilSlack after Until.
	Since, Until time.Time
}

// UntilSlack is how far past Config.Until reading goes before stopping: a
// journal is in completion order only up to the small reorderings of
// exchanges completing at nearly the same time.
const UntilSlack = time.Minute

// ctxEvery is how many exchanges are read between two looks at Run's
// context: often enough that an interrupted replay stops at once, rarely
// enough to cost nothing.
const ctxEvery = 4096

// Pipeline decodes the exchanges of a source and feeds its consumers.
// Create it with New and run it with Run.
type Pipeline struct {
	cfg Config
	dec *decode.Decoder
	// consumers are Config.Events, after the log of group events when
	// Config.Log is set.
	consumers []EventConsumer
	batch     []decode.Event // events not yet handed on
	// warned holds the API versions whose decode failure was logged, at
	// most maxWarned: a client cycling through versions would make them
	// many, and past that they are only counted (Stats.Undecoded).
	warned map[[2]int16]bool

	// lastTick is the time of the last tick handed on.
	lastTick time.Time

	exchanges atomic.Uint64
	undecoded atomic.Uint64
}

// New returns a Pipeline with cfg, defaults applied (see Config).
func New(cfg Config) *Pipeline {
	if cfg.Batch < 1 {
		cfg.Batch = 1
	}
	p := &Pipeline{cfg: cfg, dec: decode.NewDecoder(), warned: map[[2]int16]bool{}}
	if cfg.Log != nil {
		p.consumers = append(p.consumers, &exchangeLog{log: cfg.Log})
	}
	p.consumers = append(p.consumers, cfg.Events...)
	return p
}

// Stats counts what a Pipeline did. It is safe to call while Run runs.
type Stats struct {
	// Exchanges read from the source.
	Exchanges uint64
	// Undecoded exchanges did not decode; they were handed on raw, with
	// no events.
	Undecoded uint64
}

// Stats returns the counters so far.
func (p *Pipeline) Stats() Stats {
	return Stats{Exchanges: p.exchanges.Load(), Undecoded: p.undecoded.Load()}
}

// Run feeds the consumers from src until it ends (io.EOF), until reading
// passes Config.Until, or until ctx is done, and hands on the events still
// batched before returning. It returns nil at the end of the source, the
// source's error, or ctx's (checked every few thousand exchanges). A live
// pipeline ends with its source: the proxy's queue ends once the proxy has
// stopped. Run may be called again with another source; the decoder keeps
// its memory across calls.
func (p *Pipeline) Run(ctx context.Context, src Source) error {
	if o := p.cfg.Owner; o != nil {
		var wake func()
		if w, ok := src.(Waker); ok {
			wake = w.Wake
		}
		o.start(wake)
		defer o.stop() // once the events are handed on
	}
	defer p.flush()
	for n := 0; ; n++ {
		if n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("pipeline: %w", err)
			}
		}
		x, dropped, err := src.Next()
		if dropped > 0 {
			p.noteDrops(dropped)
		}
		if len(p.cfg.Blind) > 0 {
			p.noteBlind(src)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("pipeline: %w", err)
		}
		if x == nil {
			p.tick(src)
		} else if !p.handle(x) {
			return nil
		}
		if o := p.cfg.Owner; o != nil && o.queued.Load() {
			p.flush()
			o.serve()
		}
	}
}

// tick hands the time of the tick src just gave to the consumers of
// ticks, once the events before it have been handed on. A source woken
// for the Owner (Waker) returns as for a tick, with the time of its last
// tick: nothing is handed on.
func (p *Pipeline) tick(src Source) {
	ts, ok := src.(TickSource)
	if !ok {
		return
	}
	at := ts.Tick()
	if !at.After(p.lastTick) {
		return
	}
	p.lastTick = at
	p.flush()
	for _, c := range p.cfg.Ticks {
		c.Advance(at)
	}
}

// noteDrops tells the exchange consumers about n exchanges lost.
func (p *Pipeline) noteDrops(n uint64) {
	at := time.Now()
	for _, c := range p.cfg.Exchanges {
		c.Dropped(n, at)
	}
	for _, c := range p.cfg.Drops {
		c.Dropped(n, at)
	}
}

// handle decodes one exchange and hands it on. It returns false once the
// exchange is past Until and its slack: reading should stop.
func (p *Pipeline) handle(x *decode.Exchange) bool {
	p.exchanges.Add(1)
	before := len(p.batch)
	var err error
	p.batch, err = p.dec.DecodeAppend(p.batch, x)
	if err != nil {
		p.undecoded.Add(1)
		p.warnUndecoded(x, err)
	}
	intern(p.batch[before:])
	if p.cfg.Inspect != nil {
		p.cfg.Inspect(x, p.batch[before:], err)
	}
	for _, c := range p.cfg.Exchanges {
		c.Append(x)
	}
	if !p.cfg.Since.IsZero() || !p.cfg.Until.IsZero() {
		at := x.CompletedAt()
		if !p.cfg.Since.IsZero() && at.Before(p.cfg.Since) {
			p.batch = p.batch[:before]
			return true
		}
		if !p.cfg.Until.IsZero() && at.After(p.cfg.Until) {
			p.batch = p.batch[:before]
			return !at.After(p.cfg.Until.Add(UntilSlack))
		}
	}
	if len(p.cfg.Decoded) > 0 {
		events := p.batch[before:]
		p.flush() // leaves events' contents in place until the next decode
		d := decode.NewDecoded(x, events)
		for _, c := range p.cfg.Decoded {
			c.AddDecoded(d)
		}
		return true
	}
	if len(p.batch) >= p.cfg.Batch {
		p.flush()
	}
	return true
}

// flush hands the batched events to the event consumers.
func (p *Pipeline) flush() {
	if len(p.batch) == 0 {
		return
	}
	for _, c := range p.consumers {
		c.AddEvents(p.batch)
	}
	p.batch = p.batch[:0]
}

// maxWarned bounds the API versions whose decode failure is logged.
const maxWarned = 1024

// warnUndecoded logs a decode failure once per API version; later ones are
// only counted (Stats.Undecoded). The exchange was forwarded untouched
// all the same.
func (p *Pipeline) warnUndecoded(x *decode.Exchange, err error) {
	k := [2]int16{x.APIKey, x.APIVersion}
	if p.cfg.Log == nil || p.warned[k] || len(p.warned) >= maxWarned {
		return
	}
	p.warned[k] = true
	p.cfg.Log.Warn("exchange did not decode; it was forwarded untouched (logged once per api and version)",
		zap.String("api", decode.APIName(x.APIKey)), zap.Int16("api_version", x.APIVersion),
		zap.String("client_addr", x.ClientAddr), zap.Int32("broker_id", x.BrokerID), zap.Error(err))
}
