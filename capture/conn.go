package capture

import (
	"encoding/binary"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// conn is one TCP connection between a client and a broker port: its two
// directions reassembled, cut into frames, and the requests paired with
// their responses into exchanges, as the proxy pairs them.
type conn struct {
	id         uint64
	client     endpoint
	broker     endpoint
	clientAddr string
	src        *Source

	reqStream, respStream half
	reqFrames, respFrames frameReader
	requests              requestSide
	responses             responseSide
	// pending are the requests awaiting their response, oldest first.
	pending []pendingRequest

	// skip says why the rest of the connection is skipped (readIt: it
	// is read).
	skip     skipReason
	lastSeen time.Time
	ended    bool
}

// skipReason says why a connection is not read.
type skipReason uint8

const (
	readIt skipReason = iota
	skipTLS
	// skipSASLv0 is a connection that authenticated with SaslHandshake v0,
	// after which SASL tokens travel without Kafka headers: they carry
	// credentials and are never read.
	skipSASLv0
)

// pendingRequest is a request awaiting its response.
type pendingRequest struct {
	key, version int16
	corr         int32
	at           time.Time
	// observed says the exchange is handed on when answered, or when the
	// connection ends unanswered; request is its frame (nil when
	// oversized). lost says the request was lost in a gap: its response is
	// only matched.
	observed  bool
	oversized bool
	lost      bool
	request   []byte
}

// maxPending bounds the requests a connection holds awaiting responses: a
// client has at most a few in flight, so more means the responses are
// missing from the capture.
const maxPending = 1024

// maxObservedRequestOnly bounds the request-only frames (Fetch) kept, as
// the proxy bounds them (maxObservedRequest there).
const maxObservedRequestOnly = 256 << 10

// produceHead is how much of a Produce request is kept to read its acks: a
// header and a transactional id of usual lengths. A longer one is taken
// to expect a response, as the proxy takes one whose acks it cannot read.
const produceHead = 512

// versionSlack is how many versions past the newest kmsg knows a request
// may have and still be taken for a request when looking for frames: a
// broker newer than kproxy speaks them, and they are read unobserved, as
// the proxy forwards them.
const versionSlack = 4

func newConn(s *Source, id uint64, client, broker endpoint) *conn {
	c := &conn{id: id, client: client, broker: broker, clientAddr: client.String(), src: s}
	c.requests.c, c.responses.c = c, c
	c.reqFrames = frameReader{headerLen: 8, owner: &c.requests}
	c.respFrames = frameReader{headerLen: 4, owner: &c.responses}
	return c
}

// segment reads one segment of the connection, from the client when
// fromClient.
func (c *conn) segment(s *segment, fromClient bool) {
	c.lastSeen = s.at
	st := &c.src.reassembly
	stream, peer, frames := &c.respStream, &c.reqStream, &c.respFrames
	if fromClient {
		stream, peer, frames = &c.reqStream, &c.respStream, &c.reqFrames
	}
	if s.flags&tcpFIN != 0 {
		stream.finished(s.seq + uint32(s.wireLen))
	}
	if c.skip != readIt {
		c.src.skipped(c, len(s.payload))
		return
	}
	if s.flags&tcpSYN != 0 {
		// The first byte follows the SYN: the stream starts in sync.
		stream.start(s.seq + 1)
		frames.synced = true
		frames.reset()
		return
	}
	if s.flags&tcpACK != 0 {
		peer.acked(s.ack, s.at)
	}
	stream.segment(s.seq, s.payload, s.wireLen, s.at, frames, st)
	stream.expire(s.at, frames, st)
}

// closed reports whether both directions have ended.
func (c *conn) closed() bool { return c.reqStream.fin && c.respStream.fin }

// end ends the connection: what was waiting for missing bytes is read
// after a gap. When the capture saw the connection close (seen), the
// requests still unanswered are handed on without a response, as the
// proxy hands them on when a connection ends, unless the responses were
// not being followed (then they are lost: they may have been answered in
// what the capture missed). When it did not (the capture ended first, or
// the connection went quiet), they are left untold: their answers may
// have come after the capture.
func (c *conn) end(seen bool) {
	if c.skip == readIt {
		st := &c.src.reassembly
		c.reqStream.flush(&c.reqFrames, st)
		c.respStream.flush(&c.respFrames, st)
		c.reqFrames.cut()
		c.respFrames.cut()
	}
	if !seen {
		for _, p := range c.pending {
			if p.observed && !p.lost {
				c.src.stats.Unfinished++
			}
		}
		c.pending = nil
		return
	}
	if !c.respFrames.synced {
		c.dropPending(len(c.pending))
	}
	for _, p := range c.pending {
		if p.observed && !p.lost {
			c.src.emit(c.exchange(p, nil, time.Time{}, false))
		}
	}
	c.pending = nil
}

// expire gives up waiting for missing bytes that waited long enough by
// the capture's clock now.
func (c *conn) expire(now time.Time) {
	if c.skip != readIt {
		return
	}
	c.reqStream.expire(now, &c.reqFrames, &c.src.reassembly)
	c.respStream.expire(now, &c.respFrames, &c.src.reassembly)
}

// exchange is p answered by response (nil: unanswered) at at.
func (c *conn) exchange(p pendingRequest, response []byte, at time.Time, respOversized bool) *decode.Exchange {
	x := &decode.Exchange{
		ConnID:        c.id,
		ClientAddr:    c.clientAddr,
		BrokerID:      c.src.brokers.node(c.broker.port),
		APIKey:        p.key,
		APIVersion:    p.version,
		CorrelationID: p.corr,
		RequestAt:     p.at,
		ResponseAt:    at,
		Request:       p.request,
		Response:      response,
		Oversized:     p.oversized || respOversized,
	}
	if h, err := decode.ParseRequestHeader(p.request); err == nil {
		x.ClientID = h.ClientIDString()
	}
	return x
}

// push queues a request awaiting its response. When too many wait, the
// oldest is given up: its response is missing.
func (c *conn) push(p pendingRequest) {
	if len(c.pending) >= maxPending {
		c.dropPending(1)
	}
	c.pending = append(c.pending, p)
}

// dropPending gives up the n oldest requests awaiting responses: their
// responses are missing from the capture.
func (c *conn) dropPending(n int) {
	for _, p := range c.pending[:n] {
		if p.observed && !p.lost {
			c.src.lose(1)
		}
	}
	c.pending = append(c.pending[:0], c.pending[n:]...)
}

// isTLS reports whether b starts with a TLS record, and then skips the
// rest of the connection.
func (c *conn) isTLS(b []byte) bool {
	if !looksTLS(b) {
		return false
	}
	c.skip = skipTLS
	c.src.stats.TLSConnections++
	return true
}

// badHeader notes a frame header that is not plausible where one was
// expected, whose size is size: a TLS record's (isTLS), or the reader
// lost track of the frames.
func (c *conn) badHeader(size int) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(size))
	if !c.isTLS(b[:]) {
		c.src.stats.Desyncs++
	}
}

// requestSide reads the requests of a connection.
type requestSide struct {
	c   *conn
	cur pendingRequest // the request being read
	// observed, requestOnly and oversized are what header decided of it.
	observed, requestOnly, oversized bool
}

func (r *requestSide) resync(b []byte, _ time.Time) bool {
	if r.c.isTLS(b) {
		return false
	}
	if !plausibleRequest(b, r.c.src.cfg.MaxFrameSize, true) {
		return false
	}
	r.c.src.stats.Resyncs++
	return true
}

func (r *requestSide) header(size int, head []byte) (int, bool) {
	key := int16(binary.BigEndian.Uint16(head))
	version := int16(binary.BigEndian.Uint16(head[2:]))
	if size > r.c.src.cfg.MaxFrameSize || !plausibleAPI(key, version) {
		r.c.badHeader(size)
		return 0, false
	}
	if key == int16(kmsg.SASLHandshake) && version == 0 {
		r.c.skip = skipSASLv0
		r.c.src.stats.SASLv0Connections++
		return 0, false
	}
	r.cur = pendingRequest{key: key, version: version, corr: int32(binary.BigEndian.Uint32(head[4:]))}
	r.observed = decode.Observed(key) && observable(key, version)
	r.requestOnly = decode.RequestOnly(key)
	r.oversized = false
	maxKept := r.c.src.cfg.MaxObservedFrameSize
	switch {
	case r.observed && r.requestOnly:
		if size <= min(maxObservedRequestOnly, maxKept) {
			return size, true
		}
		r.observed = false // as the proxy: streamed, unobserved
	case r.observed:
		if size <= maxKept {
			return size, true
		}
		r.oversized = true
	case key == int16(kmsg.Produce):
		return produceHead, true
	}
	return 0, true
}

func (r *requestSide) frame(kept []byte, damaged bool, start, _ time.Time) {
	p := r.cur
	p.at = start
	expect := true
	if p.key == int16(kmsg.Produce) {
		if acks, ok := decode.ProduceAcks(kept); ok && acks == 0 {
			expect = false
		}
	}
	switch {
	case !r.observed:
	case damaged:
		p.lost = true
		r.c.src.lose(1)
	case r.requestOnly:
		p.request = kept
		r.c.src.emit(r.c.exchange(p, nil, time.Time{}, false))
		p.request = nil
	default:
		p.observed, p.oversized = true, r.oversized
		if !r.oversized {
			p.request = kept
		}
	}
	if expect {
		r.c.push(p)
	}
}

func (r *requestSide) lost(known bool) {
	r.c.src.loseTrack()
	if !known {
		return
	}
	// The request's end is missing, but its response will come: it is
	// matched and skipped.
	p := r.cur
	p.lost = true
	if r.observed {
		r.c.src.lose(1)
	}
	r.c.push(p)
}

// responseSide reads the responses of a connection.
type responseSide struct {
	c *conn
	// oversized says the response being read is too large to keep.
	oversized bool
}

func (r *responseSide) resync(b []byte, at time.Time) bool {
	if r.c.isTLS(b) {
		return false
	}
	if len(b) < 8 {
		return false
	}
	size := int(int32(binary.BigEndian.Uint32(b)))
	if size < 4 || size > r.c.src.cfg.MaxFrameSize {
		return false
	}
	i := r.c.find(int32(binary.BigEndian.Uint32(b[4:])))
	if i < 0 || r.c.pending[i].at.After(at) {
		return false
	}
	// A response that ends in this segment must be followed by the next
	// one, or by nothing.
	if rest := b[min(len(b), 4+size):]; len(rest) > 0 {
		if len(rest) < 8 || i+1 >= len(r.c.pending) ||
			int32(binary.BigEndian.Uint32(rest[4:])) != r.c.pending[i+1].corr {
			return false
		}
	}
	r.c.dropPending(i)
	r.c.src.stats.Resyncs++
	return true
}

// find returns the index of the pending request of correlation id corr,
// or -1.
func (c *conn) find(corr int32) int {
	for i := range c.pending {
		if c.pending[i].corr == corr {
			return i
		}
	}
	return -1
}

func (r *responseSide) header(size int, head []byte) (int, bool) {
	i := -1
	if size <= r.c.src.cfg.MaxFrameSize {
		i = r.c.find(int32(binary.BigEndian.Uint32(head)))
	}
	if i < 0 {
		r.c.badHeader(size)
		return 0, false
	}
	// The requests before it got no response: their responses are
	// missing (or they expected none, which kproxy could not tell).
	r.c.dropPending(i)
	p := r.c.pending[0]
	r.oversized = false
	if !p.observed || p.lost || p.oversized || decode.RequestOnly(p.key) {
		return 0, true // an oversized request's response is not kept either, as by the proxy
	}
	if size > r.c.src.cfg.MaxObservedFrameSize {
		r.oversized = true
		return 0, true
	}
	return size, true
}

func (r *responseSide) frame(kept []byte, damaged bool, _, end time.Time) {
	p := r.c.pending[0]
	r.c.pending = append(r.c.pending[:0], r.c.pending[1:]...)
	if !p.observed || p.lost {
		return
	}
	if damaged {
		r.c.src.lose(1)
		return
	}
	x := r.c.exchange(p, kept, end, r.oversized)
	r.c.src.brokers.learn(x)
	r.c.src.emit(x)
}

func (r *responseSide) lost(known bool) {
	r.c.src.loseTrack()
	if known {
		r.c.dropPending(1)
	}
}

// plausibleAPI reports whether key and version can be those of a request
// header: an API kmsg knows, at a version at most versionSlack past the
// newest it knows.
func plausibleAPI(key, version int16) bool {
	return key >= 0 && int(key) < len(maxVersions) && maxVersions[key] >= 0 &&
		version >= 0 && version <= maxVersions[key]+versionSlack
}

// observable reports whether an exchange of an observed API at this
// version can be decoded, as the proxy decides it (proxy/policy.go).
func observable(key, version int16) bool {
	return key >= 0 && int(key) < len(maxVersions) && version <= maxVersions[key]
}

// maxVersions holds the newest version kmsg knows of each API key, -1 for
// the keys it does not know: looked up for every frame, where asking kmsg
// allocates a request.
var maxVersions = func() []int16 {
	var vs []int16
	for key := int16(0); key < 1000; key++ {
		v := int16(-1)
		if r := kmsg.RequestForKey(key); r != nil {
			v = r.MaxVersion()
			if resp := kmsg.ResponseForKey(key); resp == nil || resp.MaxVersion() < v {
				v = -1
			}
		}
		vs = append(vs, v)
	}
	for len(vs) > 0 && vs[len(vs)-1] < 0 {
		vs = vs[:len(vs)-1]
	}
	return vs
}()

// plausibleRequest reports whether b plausibly starts with a request
// frame: a size within limits, an API and version kmsg knows, a client id
// of printable text; and when the frame ends within b, what follows starts
// with a plausible request too (next says to look that far).
func plausibleRequest(b []byte, maxFrame int, next bool) bool {
	if len(b) < 12 {
		return false
	}
	size := int(int32(binary.BigEndian.Uint32(b)))
	key := int16(binary.BigEndian.Uint16(b[4:]))
	if size < 10 || size > maxFrame || !plausibleAPI(key, int16(binary.BigEndian.Uint16(b[6:]))) {
		return false
	}
	if len(b) >= 14 {
		n := int(int16(binary.BigEndian.Uint16(b[12:])))
		if n < -1 || 10+n > size {
			return false
		}
		if id := b[14:min(len(b), 14+max(n, 0))]; !printable(id) {
			return false
		}
	}
	if rest := b[min(len(b), 4+size):]; next && len(rest) > 0 {
		return plausibleRequest(rest, maxFrame, false) || len(rest) < 12
	}
	return true
}

// printable reports whether b is text without control characters, as
// client ids are (b may end mid-character).
func printable(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 && len(b) >= utf8.UTFMax {
			return false
		}
		if r < 0x20 || r == 0x7f {
			return false
		}
		b = b[n:]
	}
	return true
}

// looksTLS reports whether b starts with a TLS record header: a content
// type (change cipher spec, alert, handshake, application data) and
// version 3.x. As a Kafka frame size it would be over 300 MB.
func looksTLS(b []byte) bool {
	return len(b) >= 3 && b[0] >= 20 && b[0] <= 23 && b[1] == 3 && b[2] <= 4
}
