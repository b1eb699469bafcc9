package capture

import "time"

// byteSink takes one direction of a connection in order: its bytes, and
// the gaps where bytes are missing from the capture.
type byteSink interface {
	// data takes the next bytes, captured at at. start says they begin a
	// TCP segment, where a sender's write most likely began: where a
	// stream that lost track of its frames looks for the next one.
	data(b []byte, at time.Time, start bool)
	// gap says that the next n bytes are missing: lost by the capture,
	// or cut by its snap length.
	gap(n int)
}

// half reassembles one direction of a TCP connection: it hands its sink
// the stream's bytes in order, each once, whatever order the segments
// were captured in and however often they were sent. A segment ahead of
// the stream waits, copied, until the bytes before it come; when they do
// not (the capture lost them), the stream goes on after a gap.
type half struct {
	started bool
	next    uint32 // sequence number of the next byte the sink takes
	// ahead holds the segments captured ahead of next, in sequence order;
	// aheadBytes counts their bytes and aheadSince is when the oldest
	// waiting began.
	ahead      []aheadSegment
	aheadBytes int
	aheadSince time.Time
	// ackedTo is how far the peer acknowledged bytes missing here, since
	// ackedSince (zero: none missing): they were sent, and the capture
	// may yet show them, late.
	ackedTo    uint32
	ackedSince time.Time
	fin        bool   // the sender closed this direction
	finSeq     uint32 // after its last byte
}

// aheadSegment is a segment waiting for the bytes before it.
type aheadSegment struct {
	seq     uint32
	data    []byte // a copy of its captured payload
	wireLen int
	at      time.Time
}

// Limits of the reassembly. A segment missing from the capture is waited
// for until this much capture time has passed or this much was captured
// after it in the same direction, whichever comes first: a retransmission
// comes within the sender's retransmission timeout (200 ms at least on
// Linux), while a segment the capture dropped (a full capture buffer)
// never comes.
const (
	gapWait     = time.Second
	maxAhead    = 1 << 20
	maxSeqAhead = 1 << 30 // a segment further ahead is not of this stream
)

// reassemblyStats counts what the reassembly met.
type reassemblyStats struct {
	retransmitted uint64 // segments whose bytes had all been taken already
	stray         uint64 // segments too far from the stream to be of it
	gaps          uint64 // gaps handed to a sink
	gapBytes      uint64 // their bytes
}

// start makes seq the stream's next sequence number: the first byte after
// a SYN, or the first segment seen of a connection already open.
func (h *half) start(seq uint32) {
	*h = half{started: true, next: seq, fin: h.fin, finSeq: h.finSeq}
}

// segment takes a segment of wireLen bytes at seq whose captured part is
// payload, captured at at.
func (h *half) segment(seq uint32, payload []byte, wireLen int, at time.Time, sink byteSink, st *reassemblyStats) {
	if wireLen == 0 {
		// Not a start: a keepalive probe's sequence number is one
		// before the stream's next byte.
		return
	}
	if !h.started {
		h.start(seq)
	}
	start := true
	switch d := int32(seq - h.next); {
	case d < 0:
		if int32(seq+uint32(wireLen)-h.next) <= 0 {
			st.retransmitted++
			return
		}
		// Partly taken already: the rest is new, but it does not begin
		// the sender's write.
		trim := int(-d)
		payload = payload[min(trim, len(payload)):]
		wireLen -= trim
		start = false
	case d > 0:
		if d > maxSeqAhead {
			st.stray++
			return
		}
		h.wait(seq, payload, wireLen, at)
		if h.aheadBytes > maxAhead {
			h.skipToAhead(sink, st)
		}
		return
	}
	h.deliver(payload, wireLen, at, start, sink, st)
	h.drain(sink, st)
}

// deliver hands the sink a segment that starts at next.
func (h *half) deliver(payload []byte, wireLen int, at time.Time, start bool, sink byteSink, st *reassemblyStats) {
	if len(payload) > 0 {
		sink.data(payload, at, start)
	}
	if cut := wireLen - len(payload); cut > 0 {
		st.gaps++
		st.gapBytes += uint64(cut)
		sink.gap(cut)
	}
	h.next += uint32(wireLen)
	if !h.ackedSince.IsZero() && int32(h.next-h.ackedTo) >= 0 {
		h.ackedSince = time.Time{}
	}
}

// wait keeps a copy of a segment captured ahead of the stream, in order.
func (h *half) wait(seq uint32, payload []byte, wireLen int, at time.Time) {
	i := len(h.ahead)
	for i > 0 && int32(h.ahead[i-1].seq-seq) > 0 {
		i--
	}
	if i > 0 && h.ahead[i-1].seq == seq && h.ahead[i-1].wireLen >= wireLen {
		return // the same segment again
	}
	if len(h.ahead) == 0 {
		h.aheadSince = at
	}
	h.ahead = append(h.ahead, aheadSegment{})
	copy(h.ahead[i+1:], h.ahead[i:])
	h.ahead[i] = aheadSegment{seq: seq, data: append([]byte(nil), payload...), wireLen: wireLen, at: at}
	h.aheadBytes += len(payload)
}

// drain hands the sink the waiting segments that the stream has reached.
func (h *half) drain(sink byteSink, st *reassemblyStats) {
	for len(h.ahead) > 0 {
		a := h.ahead[0]
		d := int32(a.seq - h.next)
		if d > 0 {
			return
		}
		h.ahead = h.ahead[1:]
		h.aheadBytes -= len(a.data)
		if len(h.ahead) == 0 {
			h.ahead = nil // let the copies go
		}
		if int32(a.seq+uint32(a.wireLen)-h.next) <= 0 {
			st.retransmitted++
			continue
		}
		payload, wireLen, start := a.data, a.wireLen, d == 0
		if d < 0 {
			payload = payload[min(int(-d), len(payload)):]
			wireLen -= int(-d)
		}
		h.deliver(payload, wireLen, a.at, start, sink, st)
	}
}

// skipToAhead gives up on the bytes missing before the first waiting
// segment: the sink is told of the gap and the stream goes on from there.
func (h *half) skipToAhead(sink byteSink, st *reassemblyStats) {
	if len(h.ahead) == 0 {
		return
	}
	n := int(h.ahead[0].seq - h.next)
	st.gaps++
	st.gapBytes += uint64(n)
	sink.gap(n)
	h.next = h.ahead[0].seq
	h.drain(sink, st)
	h.aheadSince = time.Time{}
	if len(h.ahead) > 0 {
		h.aheadSince = h.ahead[0].at
	}
}

// expire gives up waiting when the oldest waiting segment has waited
// gapWait by the capture's clock now.
func (h *half) expire(now time.Time, sink byteSink, st *reassemblyStats) {
	for len(h.ahead) > 0 && now.Sub(h.aheadSince) >= gapWait {
		h.skipToAhead(sink, st)
	}
	if !h.ackedSince.IsZero() && now.Sub(h.ackedSince) >= gapWait {
		h.skipAcked(sink, st)
	}
}

// acked learns, at at, that the peer acknowledged every byte before ack.
// Bytes acknowledged and not captured were sent: once they have been
// missing for gapWait, they are given up as a gap, as a segment waited for
// is (expire); the end of the capture gives them up at once (flush).
func (h *half) acked(ack uint32, at time.Time) {
	if !h.started {
		return
	}
	if h.fin && int32(ack-h.finSeq) > 0 {
		ack = h.finSeq // the FIN's own sequence number
	}
	if int32(ack-h.next) <= 0 {
		return
	}
	if h.ackedSince.IsZero() {
		h.ackedSince, h.ackedTo = at, ack
	} else if int32(ack-h.ackedTo) > 0 {
		h.ackedTo = ack
	}
}

// finished notes the sender's FIN, after byte seq.
func (h *half) finished(seq uint32) {
	h.fin, h.finSeq = true, seq
	if int32(h.ackedTo-seq) > 0 {
		h.ackedTo = seq // it acknowledged the FIN itself
	}
}

// skipAcked gives up the bytes acknowledged and not captured, if no
// captured segment waits after them.
func (h *half) skipAcked(sink byteSink, st *reassemblyStats) {
	if !h.ackedSince.IsZero() && len(h.ahead) == 0 && int32(h.ackedTo-h.next) > 0 {
		n := int(h.ackedTo - h.next)
		st.gaps++
		st.gapBytes += uint64(n)
		sink.gap(n)
		h.next = h.ackedTo
	}
	h.ackedSince = time.Time{}
}

// flush gives up on whatever is missing and hands the sink what waits: the
// connection ended, or the capture did.
func (h *half) flush(sink byteSink, st *reassemblyStats) {
	for len(h.ahead) > 0 {
		h.skipToAhead(sink, st)
	}
	if h.fin {
		h.acked(h.finSeq, time.Unix(1, 0))
	}
	h.skipAcked(sink, st)
}
