package proxy

import (
	"strings"

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
	f := eventFields(e)
	ce.Write(
		zap.String("group", e.Group),
		zap.String("member_id", f.member),
		zap.String("instance_id", f.instance),
		zap.Int32("generation", f.generation),
		zap.String("api", decode.APIName(e.APIKey)),
		zap.Int16("api_version", e.APIVersion),
		zap.String("error", decode.ErrorName(f.errorCode)),
		zap.Duration("latency", e.Latency()),
		zap.String("client_id", e.ClientID),
		zap.String("client_addr", e.ClientAddr),
		zap.Int32("broker_id", e.BrokerID),
	)
}

// logFields are the per-API facts of a log line.
type logFields struct {
	member, instance string
	generation       int32 // -1 when the API has none
	errorCode        int16
}

// eventFields picks the member, instance, generation (or member epoch for
// KIP-848) and error of a group event. Batched requests (LeaveGroup v3+)
// list their members comma-separated; per-partition errors (OffsetCommit)
// report the first one.
func eventFields(e *decode.Event) logFields {
	f := logFields{generation: -1}
	switch {
	case e.FindCoordinator != nil:
		f.errorCode = e.FindCoordinator.ErrorCode
	case e.JoinGroup != nil:
		j := e.JoinGroup
		f.member, f.instance, f.errorCode = j.MemberID, j.InstanceID, j.ErrorCode
		if j.AssignedMemberID != "" {
			f.member = j.AssignedMemberID
		}
		if e.Responded() {
			f.generation = j.Generation
		}
	case e.SyncGroup != nil:
		s := e.SyncGroup
		f.member, f.instance, f.generation, f.errorCode = s.MemberID, s.InstanceID, s.Generation, s.ErrorCode
	case e.Heartbeat != nil:
		h := e.Heartbeat
		f.member, f.instance, f.generation, f.errorCode = h.MemberID, h.InstanceID, h.Generation, h.ErrorCode
	case e.LeaveGroup != nil:
		l := e.LeaveGroup
		f.errorCode = l.ErrorCode
		var members, instances []string
		for _, m := range l.Members {
			members = append(members, m.MemberID)
			if m.InstanceID != "" {
				instances = append(instances, m.InstanceID)
			}
			if f.errorCode == 0 {
				f.errorCode = m.ErrorCode
			}
		}
		f.member, f.instance = strings.Join(members, ","), strings.Join(instances, ",")
	case e.OffsetCommit != nil:
		c := e.OffsetCommit
		f.member, f.instance, f.generation = c.MemberID, c.InstanceID, c.Generation
		for _, t := range c.Topics {
			for _, p := range t.Partitions {
				if f.errorCode == 0 {
					f.errorCode = p.ErrorCode
				}
			}
		}
	case e.OffsetFetch != nil:
		o := e.OffsetFetch
		f.member, f.errorCode = o.MemberID, o.ErrorCode
		if o.MemberID != "" {
			f.generation = o.MemberEpoch
		}
	case e.ConsumerGroupHeartbeat != nil:
		h := e.ConsumerGroupHeartbeat
		f.member, f.generation, f.errorCode = h.MemberID, h.MemberEpoch, h.ErrorCode
		if h.InstanceID != nil {
			f.instance = *h.InstanceID
		}
		if h.AssignedMemberID != "" {
			f.member = h.AssignedMemberID
		}
		if e.Responded() && h.ErrorCode == 0 {
			f.generation = h.AssignedEpoch
		}
	}
	return f
}
