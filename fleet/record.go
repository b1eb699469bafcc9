package fleet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/journal"
)

// Record headers of the events topic (docs/fleet.md).
const (
	// HeaderInstance names the kproxy instance that observed the
	// exchange (--instance-id).
	HeaderInstance = "kproxy.instance"
	// HeaderRun identifies one run of that instance: a random value
	// chosen when it started, so that a restarted instance's sequence
	// numbers, which start again at 0, are a new stream.
	HeaderRun = "kproxy.run"
	// HeaderSeq is the record's place in its run's stream, a decimal
	// number from 0, +1 per exchange or gap record published: the order
	// the instance observed them in. Markers carry none.
	HeaderSeq = "kproxy.seq"
	// HeaderFormat is the record format version, "1".
	HeaderFormat = "kproxy.format"
	// HeaderClientCert is, on an exchange record of a client that
	// presented a certificate (mutual TLS), its subject
	// (decode.Exchange.ClientCert); absent otherwise. Readers that do not
	// know it read the exchange without it.
	HeaderClientCert = "kproxy.client-cert"
)

// FormatVersion is the record format this package writes and reads.
const FormatVersion = "1"

// RecordMarker is the type of a marker value: an instance saying it is
// alive (or stopping) and what its clock reads. Types 1 (exchange) and 2
// (gap) are the journal's (journal.RecordExchange, journal.RecordGap).
const RecordMarker = 0x10

// markerLen is the whole marker value: type, time, published, flags.
const markerLen = 18

// markerStopping is the marker flag of an instance's last record.
const markerStopping = 1 << 0

// Kind says what a Record holds.
type Kind uint8

// Kinds of records.
const (
	// KindExchange is one observed exchange.
	KindExchange Kind = journal.RecordExchange
	// KindGap counts exchanges the instance observed but could not publish
	// (its buffer was full, or its own pipeline's queue was).
	KindGap Kind = journal.RecordGap
	// KindMarker is a liveness marker.
	KindMarker Kind = RecordMarker
)

// Record is one record of the events topic, decoded.
type Record struct {
	// Instance is the publishing instance's id, Run its run's.
	Instance, Run string
	// Key is the record's key: a group id, or the instance id.
	Key string
	// Seq is the record's place in its run's stream; -1 for a marker.
	Seq  int64
	Kind Kind
	// X is the exchange of a KindExchange record. Its Request and
	// Response alias the record's value.
	X *decode.Exchange
	// At is, for a gap, when it was noted; for a marker, the instance's
	// clock when it sent the marker.
	At time.Time
	// Dropped is a gap's count of exchanges lost.
	Dropped uint64
	// Published is a marker's count of records its run sequenced so far
	// (its next sequence number).
	Published uint64
	// Stopping marks a run's last marker: the instance stopped cleanly.
	Stopping bool
}

// streamID is the stream a record belongs to: one run of one instance.
func (r *Record) streamID() string { return r.Instance + "\x00" + r.Run }

// ErrNotFleetRecord is a record without the headers of this format: not
// written by kproxy, or by a newer one.
var ErrNotFleetRecord = errors.New("fleet: not a kproxy events record")

// headers are a run's constant headers; seq is appended per record.
func headers(instance, run string) []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: HeaderInstance, Value: []byte(instance)},
		{Key: HeaderRun, Value: []byte(run)},
		{Key: HeaderFormat, Value: []byte(FormatVersion)},
	}
}

func withSeq(h []kgo.RecordHeader, seq uint64) []kgo.RecordHeader {
	out := make([]kgo.RecordHeader, len(h), len(h)+1)
	copy(out, h)
	return append(out, kgo.RecordHeader{Key: HeaderSeq, Value: strconv.AppendUint(nil, seq, 10)})
}

// exchangeRecord is x's record, keyed by group (the instance id when x
// concerns no group). Records carry no timestamp of their own: the client
// stamps them when produced (kgo also counts its delivery timeout from
// the timestamp, so an exchange's own time would time out a backlog).
func exchangeRecord(h []kgo.RecordHeader, seq uint64, key string, x *decode.Exchange) *kgo.Record {
	v := journal.AppendExchangePayload(make([]byte, 0, journal.ExchangePayloadLen(x)), x)
	hs := withSeq(h, seq)
	if x.ClientCert != "" {
		hs = append(hs, kgo.RecordHeader{Key: HeaderClientCert, Value: []byte(x.ClientCert)})
	}
	return &kgo.Record{Key: []byte(key), Value: v, Headers: hs}
}

// gapRecord is a gap of n exchanges noted at at, keyed by instance.
func gapRecord(h []kgo.RecordHeader, seq uint64, instance string, at time.Time, n uint64) *kgo.Record {
	return &kgo.Record{Key: []byte(instance), Value: journal.AppendGapPayload(nil, at, n), Headers: withSeq(h, seq)}
}

// markerRecord is a marker sent at at, keyed by instance.
func markerRecord(h []kgo.RecordHeader, instance string, at time.Time, published uint64, stopping bool) *kgo.Record {
	v := make([]byte, 0, markerLen)
	v = append(v, RecordMarker)
	v = binary.BigEndian.AppendUint64(v, uint64(at.UnixNano()))
	v = binary.BigEndian.AppendUint64(v, published)
	var flags byte
	if stopping {
		flags |= markerStopping
	}
	v = append(v, flags)
	return &kgo.Record{Key: []byte(instance), Value: v, Headers: h}
}

// Decode reads one record of the events topic. An exchange's Request and
// Response alias r.Value.
func Decode(r *kgo.Record) (Record, error) {
	out := Record{Seq: -1, Key: string(r.Key)}
	var format, cert string
	seen := false
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderInstance:
			out.Instance, seen = string(h.Value), true
		case HeaderRun:
			out.Run = string(h.Value)
		case HeaderFormat:
			format = string(h.Value)
		case HeaderClientCert:
			cert = string(h.Value)
		case HeaderSeq:
			n, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil || n < 0 {
				return out, fmt.Errorf("fleet: record at %s[%d]@%d: bad %s header %q", r.Topic, r.Partition, r.Offset, HeaderSeq, h.Value)
			}
			out.Seq = n
		}
	}
	if !seen || format != FormatVersion || len(r.Value) == 0 {
		return out, fmt.Errorf("%w (at %s[%d]@%d)", ErrNotFleetRecord, r.Topic, r.Partition, r.Offset)
	}
	out.Kind = Kind(r.Value[0])
	var err error
	switch out.Kind {
	case KindExchange:
		out.X = &decode.Exchange{}
		err = journal.ParseExchangePayload(out.X, r.Value)
		out.X.ClientCert = cert
	case KindGap:
		out.At, out.Dropped, err = journal.ParseGapPayload(r.Value)
	case KindMarker:
		if len(r.Value) != markerLen {
			err = journal.ErrPayload
			break
		}
		out.At = time.Unix(0, int64(binary.BigEndian.Uint64(r.Value[1:])))
		out.Published = binary.BigEndian.Uint64(r.Value[9:])
		out.Stopping = r.Value[17]&markerStopping != 0
	default:
		err = fmt.Errorf("unknown record type %d", out.Kind)
	}
	if err == nil && out.Kind != KindMarker && out.Seq < 0 {
		err = fmt.Errorf("no %s header", HeaderSeq)
	}
	if err != nil {
		return out, fmt.Errorf("fleet: record at %s[%d]@%d from %q: %w", r.Topic, r.Partition, r.Offset, out.Instance, err)
	}
	return out, nil
}

// recordKey is the key of an exchange's record: the group of its first
// event that names one, so that one group's records stay in one partition
// and in order; the instance id for an exchange of no group (Fetch and
// ApiVersions requests, Metadata, exchanges too large to observe).
func recordKey(instance string, events []decode.Event) string {
	for i := range events {
		if events[i].Group != "" {
			return events[i].Group
		}
	}
	return instance
}
