package proxy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"go.uber.org/zap"
)

// errStopped ends a request pump that stopped reading at a frame boundary
// because the proxy is shutting down.
var errStopped = errors.New("proxy: stopped")

// conn is one client connection and its upstream connection. Two
// goroutines move its bytes: requestPump (client to broker), run by serve,
// and responsePump (broker to client), started by serve. Each ends when
// its source fails or closes; either closes both sockets when it ends, so
// the other ends too.
type conn struct {
	p          *Proxy
	id         uint64
	brokerID   int32
	client     net.Conn
	clientAddr string
	log        *zap.Logger

	pending inflight

	mu sync.Mutex
	// upstream is set by serve before the pumps start; close reads it
	// from other goroutines.
	upstream   net.Conn
	closed     bool
	inFrame    bool // requestPump is between the first and last byte of a frame
	stopping   bool // shutdown: read no new requests
	reqStopped bool // requestPump stopped for shutdown at a frame boundary
}

// serve runs the connection until either side closes or the proxy stops.
func (c *conn) serve() {
	defer c.close()
	br := bufio.NewReaderSize(c.client, readBufSize)

	// Clients speak first. Read the first size before dialing so that a
	// TLS client or a port scanner costs no upstream connection.
	prefix, size, err := frameSize(br)
	if err != nil {
		c.log.Debug("client closed before its first request", zap.Error(err))
		return
	}
	if isTLSHello(prefix) {
		c.p.stats.tlsHellos.Add(1)
		c.log.Warn("TLS ClientHello on a plaintext listener: kproxy listeners speak plaintext Kafka; " +
			"configure the client without TLS (security.protocol=PLAINTEXT or SASL_PLAINTEXT); closing")
		return
	}
	up, err := c.p.dialUpstream(c.brokerID, c.log)
	if err != nil {
		return
	}
	if !c.setUpstream(up) {
		// Closed by a shutdown timeout while dialing.
		up.Close()
		return
	}

	respDone := make(chan struct{})
	go func() {
		defer close(respDone)
		c.responsePump()
	}()
	err = c.requestPump(br, prefix, size)
	if errors.Is(err, errStopped) && !c.requestsStopped() {
		// Shutting down at a frame boundary: responsePump delivers what
		// is still in flight, then ends; Run bounds the wait by closing
		// the sockets.
		<-respDone
		return
	}
	c.close()
	<-respDone
}

func (c *conn) setUpstream(up net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.upstream = up
	return true
}

// close closes both sockets, once.
func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.client.Close()
	if c.upstream != nil {
		c.upstream.Close()
	}
}

// requestsStopped records that requestPump stopped for shutdown and reports
// whether nothing is left in flight.
func (c *conn) requestsStopped() bool {
	c.mu.Lock()
	c.reqStopped = true
	c.mu.Unlock()
	return c.pending.len() == 0
}

// drained reports whether requestPump stopped for shutdown and every
// response has been forwarded. A pending request leaves the queue only
// once its response is written whole, so this never cuts a response.
func (c *conn) drained() bool {
	c.mu.Lock()
	stopped := c.reqStopped
	c.mu.Unlock()
	return stopped && c.pending.len() == 0
}

// stop asks the connection to read no new requests: a request pump blocked
// between frames is woken by a read deadline in the past; one inside a frame
// finishes it and then stops.
func (c *conn) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopping = true
	if !c.inFrame {
		c.client.SetReadDeadline(time.Now())
	}
}

// frameStart marks the start of a request frame and reports whether the
// pump may go on.
func (c *conn) frameStart() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFrame = !c.stopping
	return c.inFrame
}

// frameEnd marks the end of a request frame and reports whether the pump
// must stop.
func (c *conn) frameEnd() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFrame = false
	return c.stopping
}

func (c *conn) isStopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopping
}

// requestPump forwards requests from the client to the broker, starting
// with the one whose size prefix serve already read. It ends on the first
// error, on a frame it refuses, or with errStopped.
func (c *conn) requestPump(br *bufio.Reader, prefix [4]byte, size int32) error {
	for {
		if !c.frameStart() {
			return errStopped
		}
		at := time.Now()
		if err := c.forwardRequest(br, prefix, size, at); err != nil {
			return err
		}
		if c.frameEnd() {
			return errStopped
		}
		var err error
		prefix, size, err = frameSize(br)
		if err != nil {
			if c.isStopping() {
				return errStopped
			}
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				c.log.Debug("client closed the connection")
			} else {
				c.log.Info("client connection failed", zap.Error(err))
			}
			return err
		}
	}
}

// minRequest is the size of the fixed part of a request header: api key,
// api version, correlation id.
const minRequest = 8

// forwardRequest forwards one request frame.
func (c *conn) forwardRequest(br *bufio.Reader, prefix [4]byte, size int32, at time.Time) error {
	if err := c.checkSize(prefix, size, minRequest, "request"); err != nil {
		return err
	}
	fixed, err := br.Peek(minRequest)
	if err != nil {
		c.log.Debug("client closed mid-request", zap.Error(err))
		return err
	}
	key := int16(binary.BigEndian.Uint16(fixed))
	p := pending{
		key:     key,
		version: int16(binary.BigEndian.Uint16(fixed[2:])),
		corrID:  int32(binary.BigEndian.Uint32(fixed[4:])),
		at:      at,
	}
	c.p.stats.requestFrames.Add(1)
	c.p.stats.bytesFromClients.Add(uint64(size) + 4)

	if observed(key) {
		frame, err := readFrame(br, prefix, size)
		if err != nil {
			c.log.Debug("client closed mid-request", zap.Error(err))
			return err
		}
		if h, err := decode.ParseRequestHeader(frame[4:]); err == nil {
			p.clientID = h.ClientIDString()
		}
		p.request = frame[4:]
		c.pending.push(p)
		if _, err := c.upstream.Write(frame); err != nil {
			// responsePump logs the broker side's failure.
			c.log.Debug("request write failed", zap.Int16("api_key", key), zap.Error(err))
			return err
		}
		return nil
	}

	var consumed []byte
	expect := true
	if key == 0 {
		// Produce with acks=0 gets no response: queueing it would make
		// the next response look mismatched.
		var err error
		consumed, expect, err = c.produceExpectsResponse(br, int(size))
		if err != nil {
			return err
		}
	}
	if expect {
		c.pending.push(p)
	}
	rest := int(size) - len(consumed)
	if _, err := streamFrame(c.upstream, br, c.client, prefix, consumed, rest, c.p.copyMode); err != nil {
		c.log.Debug("request forwarding failed", zap.Int16("api_key", key), zap.Error(err))
		return err
	}
	return nil
}

// produceExpectsResponse reads a Produce request's acks. It peeks when the
// header and transactional id fit in the read buffer; otherwise (client and
// transactional ids of kilobytes) it consumes them and returns them, to be
// written before the rest of the frame.
func (c *conn) produceExpectsResponse(br *bufio.Reader, size int) ([]byte, bool, error) {
	peek, err := br.Peek(min(size, br.Size()))
	if err != nil {
		c.log.Debug("client closed mid-request", zap.Error(err))
		return nil, false, err
	}
	if acks, ok := produceAcks(peek); ok {
		return nil, acks != 0, nil
	}
	if len(peek) == size {
		c.log.Warn("produce request too short to hold acks; expecting a response", zap.Int("size", size))
		return nil, true, nil
	}
	consumed := make([]byte, min(size, maxProduceHead))
	if _, err := io.ReadFull(br, consumed); err != nil {
		return nil, false, err
	}
	acks, ok := produceAcks(consumed)
	if !ok {
		c.log.Warn("produce request header does not parse; expecting a response", zap.Int("size", size))
	}
	return consumed, !ok || acks != 0, nil
}

// checkSize refuses frames larger than MaxFrameSize or too small to be
// Kafka, logging why.
func (c *conn) checkSize(prefix [4]byte, size, min int32, what string) error {
	if size >= min && size <= c.p.cfg.MaxFrameSize {
		return nil
	}
	if size > c.p.cfg.MaxFrameSize || size < 0 {
		c.p.stats.oversizedFrames.Add(1)
		c.log.Error(what+" frame larger than the maximum frame size; closing the connection",
			zap.Int64("size", int64(uint32(size))), zap.Int32("max_frame_size", c.p.cfg.MaxFrameSize),
			zap.String("prefix", describePrefix(prefix)))
		return errOversized
	}
	c.log.Error(what+" frame too short to be Kafka; closing the connection",
		zap.Int32("size", size), zap.String("prefix", describePrefix(prefix)))
	return errShortFrame
}

var (
	errOversized  = errors.New("proxy: frame larger than the maximum frame size")
	errShortFrame = errors.New("proxy: frame shorter than a header")
)

// responsePump forwards responses from the broker to the client, matching
// each to the oldest pending request, which leaves the queue once its
// response is written. It ends on the first error, on a correlation id
// mismatch, or once shutdown has emptied the queue.
func (c *conn) responsePump() {
	defer c.observeUnanswered()
	defer c.close()
	br := bufio.NewReaderSize(c.upstream, readBufSize)
	for {
		if c.drained() {
			return
		}
		prefix, size, err := frameSize(br)
		if err != nil {
			c.upstreamEnded(err)
			return
		}
		if err := c.forwardResponse(br, prefix, size); err != nil {
			return
		}
	}
}

// upstreamEnded logs why the broker side ended.
func (c *conn) upstreamEnded(err error) {
	switch {
	case c.drained():
	case errors.Is(err, net.ErrClosed):
		// We closed it: the client side ended first.
	default:
		c.log.Warn("broker closed the connection; closing the client connection",
			zap.Int("in_flight", c.pending.len()), zap.Error(err))
	}
}

// forwardResponse forwards one response frame.
func (c *conn) forwardResponse(br *bufio.Reader, prefix [4]byte, size int32) error {
	if err := c.checkSize(prefix, size, 4, "response"); err != nil {
		return err
	}
	cid, err := br.Peek(4)
	if err != nil {
		c.upstreamEnded(err)
		return err
	}
	corrID := int32(binary.BigEndian.Uint32(cid))
	p, ok := c.pending.peek()
	if !ok || p.corrID != corrID {
		c.p.stats.correlationMismatches.Add(1)
		want := zap.Skip()
		if ok {
			want = zap.Int32("want_corr_id", p.corrID)
		}
		c.log.Error("response correlation id does not match the oldest request in flight; closing the connection",
			zap.Int32("corr_id", corrID), want, zap.Bool("none_in_flight", !ok))
		return errMismatch
	}
	c.p.stats.responseFrames.Add(1)
	c.p.stats.bytesFromBrokers.Add(uint64(size) + 4)

	if p.request == nil && !rewritten(p.key) {
		if _, err := streamFrame(c.client, br, c.upstream, prefix, nil, int(size), c.p.copyMode); err != nil {
			c.log.Debug("response forwarding failed", zap.Error(err))
			return err
		}
		c.pending.pop()
		return nil
	}

	frame, err := readFrame(br, prefix, size)
	if err != nil {
		c.upstreamEnded(err)
		return err
	}
	at := time.Now()
	out := frame
	if rewritten(p.key) {
		rw, err := rewriteResponse(c.p, p.key, p.version, frame[4:])
		switch {
		case err != nil:
			c.p.stats.rewriteFailures.Add(1)
			c.log.Warn("response not rewritten: it does not parse; forwarded untouched",
				zap.String("api", decode.APIName(p.key)), zap.Int16("api_version", p.version), zap.Error(err))
		case rw != nil:
			out = rw
		}
	}
	if _, err := c.client.Write(out); err != nil {
		c.log.Debug("client write failed", zap.Error(err))
		return err
	}
	c.pending.pop()
	if p.request != nil {
		c.p.observe(c.exchange(p, frame[4:], at))
	}
	return nil
}

var errMismatch = errors.New("proxy: response correlation id mismatch")

// exchange builds the observed exchange of a request and its response (nil
// when none came).
func (c *conn) exchange(p pending, response []byte, at time.Time) *decode.Exchange {
	return &decode.Exchange{
		ConnID:        c.id,
		ClientAddr:    c.clientAddr,
		BrokerID:      c.brokerID,
		APIKey:        p.key,
		APIVersion:    p.version,
		CorrelationID: p.corrID,
		ClientID:      p.clientID,
		RequestAt:     p.at,
		ResponseAt:    at,
		Request:       p.request,
		Response:      response,
	}
}

// observeUnanswered hands observed requests that got no response (the
// connection ended first) to the observers, so that a join that never
// completed is still seen.
func (c *conn) observeUnanswered() {
	for _, p := range c.pending.drain() {
		if p.request != nil {
			c.p.observe(c.exchange(p, nil, time.Time{}))
		}
	}
}
