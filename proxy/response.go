package proxy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kproxy-dev/kproxy/decode"
)

// responsePump forwards responses from the broker to the client, matching
// each to the oldest pending request, which leaves the queue once its
// response is written. It ends on the first error, on a correlation id
// mismatch, or once shutdown has emptied the queue.
func (c *conn) responsePump() {
	defer c.observeUnanswered()
	defer c.close()
	br := bufio.NewReaderSize(readerOf(c.upstream), readBufSize)
	for {
		if c.drained() {
			return
		}
		prefix, size, err := frameSize(br)
		if err != nil {
			c.upstreamEnded(err)
			return
		}
		c.active(time.Now())
		if err := c.forwardResponse(br, prefix, size); err != nil {
			if errors.Is(err, errOpaque) {
				c.pipeBroker(br)
			}
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
		c.p.rate.warn(c.log, "broker_closed", "broker closed the connection; closing the client connection",
			zap.Int("in_flight", c.pending.len()), zap.Error(err))
	}
}

// responseCut counts a streamed response that did not reach the client
// whole: the broker closed or reset mid-frame (a broker crash), or the
// client went away while it was being written. Either way the frame was
// cut, and the client connection closes with it.
func (c *conn) responseCut(err error) {
	if !truncated(err) {
		c.log.Debug("response forwarding failed", zap.Error(err))
		return
	}
	c.p.stats.truncatedFrames.Add(1)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// Only a read ends in EOF: the broker's side.
		c.upstreamEnded(err)
		return
	}
	// A reset, from either side (splice does not say which).
	c.p.rate.warn(c.log, "response_reset", "connection reset in the middle of a response; closing the client connection",
		zap.Int("in_flight", c.pending.len()), zap.Error(err))
}

// forwardResponse forwards one response frame, or the bare SASL token
// answering a client's (saslv0.go).
func (c *conn) forwardResponse(br *bufio.Reader, prefix [4]byte, size int32) error {
	// A request is queued before it is written, so the head is the
	// request this frame answers.
	p, ok := c.pending.peek()
	if ok && p.sasl == saslToken {
		return c.forwardTokenResponse(br, prefix, size)
	}
	// Only responses kproxy reads whole are held to MaxFrameSize, below.
	if err := c.checkSize(prefix, size, 4, maxFrame, "response"); err != nil {
		return err
	}
	cid, err := br.Peek(4)
	if err != nil {
		c.upstreamEnded(err)
		return err
	}
	corrID := int32(binary.BigEndian.Uint32(cid))
	if !ok || p.corrID != corrID {
		c.p.stats.correlationMismatches.Add(1)
		c.logMismatch(corrID, p, ok)
		return errMismatch
	}
	if p.internal != nil {
		return c.takeInternal(br, prefix, size, p)
	}
	// A response walked to rewrite its tail (ShareFetch) is streamed even
	// when observed: the observers get its skeleton (forwardWalked).
	walked := rewriteOf(p.key, p.version) == rewriteTail
	buffered := p.request != nil && !walked || rewritten(p.key, p.version) || p.sasl == saslHandshake
	if buffered && !rewritten(p.key, p.version) && p.sasl != saslHandshake && size > c.p.cfg.MaxObservedFrameSize {
		buffered = false
		c.unobserved(&p, "unobserved", "response of interest larger than the maximum observed frame size: "+
			"forwarded without being observed", size, zap.Int32("max_observed_frame_size", c.p.cfg.MaxObservedFrameSize))
	}
	if buffered && size > c.p.cfg.MaxFrameSize {
		c.p.stats.oversizedFrames.Add(1)
		c.p.rate.log(c.log, zapcore.ErrorLevel, "oversized_response", "response frame larger than the maximum frame size; kproxy reads it whole to rewrite or observe it, "+
			"so it closes the connection instead (raise the maximum frame size if the broker means it)",
			zap.String("api", decode.APIName(p.key)), zap.Int16("api_version", p.version),
			zap.Int32("size", size), zap.Int32("max_frame_size", c.p.cfg.MaxFrameSize))
		return errOversized
	}
	var held *hold
	if buffered {
		// A rewritten response (and a SaslHandshake's) must be whole;
		// an observed one can be streamed unobserved instead of waiting.
		must := rewritten(p.key, p.version) || p.sasl == saslHandshake
		h, ok := takeResponse(c.p.budget, 4+int64(size), must)
		if !ok {
			buffered = false
			c.unobserved(&p, "unobserved_budget", "response of interest arrived with the buffer budget spent: "+
				"forwarded without being observed", size, zap.Int64("max_buffered_bytes", c.p.cfg.MaxBufferedBytes))
		}
		held = h
	}
	defer held.release()
	c.p.stats.responseFrames.Add(1)
	c.p.stats.bytesFromBrokers.Add(uint64(size) + 4)
	if !buffered {
		var err error
		var skeleton []byte
		if walked {
			skeleton, err = c.forwardWalked(br, prefix, size, p)
		} else {
			_, err = streamFrame(c.client, br, c.upstream, prefix, nil, int(size), c.p.copyMode)
		}
		if err != nil {
			c.responseCut(err)
			return err
		}
		c.pending.pop()
		switch {
		case walked && p.request != nil && skeleton != nil:
			c.p.observe(c.exchange(p, skeleton, time.Now()))
		case walked && p.request != nil:
			c.unobserved(&p, "unobserved", "response of interest whose structure kproxy could not keep: "+
				"forwarded without being observed", size, zap.Int32("max_observed_frame_size", c.p.cfg.MaxObservedFrameSize))
			c.p.observe(c.exchange(p, nil, time.Now()))
		case p.oversized:
			c.p.observe(c.exchange(p, nil, time.Now()))
		}
		p.held.release()
		return nil
	}

	frame, err := readFrame(br, prefix, size)
	if err != nil {
		if truncated(err) {
			c.p.stats.truncatedFrames.Add(1)
		}
		c.upstreamEnded(err)
		return err
	}
	at := time.Now()
	out := frame
	if rewritten(p.key, p.version) {
		rw, err := rewriteResponse(c.p, p.key, p.version, frame[4:])
		switch {
		case err != nil:
			c.rewriteFailed(p, err)
		case rw != nil:
			out = rw
		}
	}
	// Queue the exchange before the client can read the response: what
	// the client does once it has it (a SyncGroup after its JoinGroup,
	// maybe on another connection) is then queued after it, and the
	// pipeline reads cause before effect. The broker answered even if the
	// client is gone, or never reads: observe the response either way.
	if p.request != nil || p.oversized {
		c.p.observe(c.exchange(p, frame[4:], at))
	}
	_, err = writeConn(c.client, out)
	// Pop only now, so that shutdown waits for the write (see drained).
	c.pending.pop()
	p.held.release()
	if err != nil {
		c.log.Debug("client write failed", zap.Error(err))
		return err
	}
	if p.sasl == saslHandshake {
		return c.handshakeAnswered(p, frame[4:])
	}
	return nil
}

// forwardWalked streams a response whose tail names brokers (rewriteTail),
// rewriting that tail in place (walkResponse). A response whose structure
// or tail does not parse is forwarded untouched and counted as a rewrite
// failure; one whose endpoints do not fit is counted as dropped. For an
// observed exchange (its request kept), it returns the response's skeleton
// after the size prefix, its records elided (walker.keepSkeleton), or nil
// when the structure did not parse or the skeleton is larger than the
// maximum observed frame size.
func (c *conn) forwardWalked(br *bufio.Reader, prefix [4]byte, size int32, p pending) (skeleton []byte, err error) {
	w := newWalker(c.client, br, c.upstream, c.p.copyMode, prefix, size)
	if p.request != nil {
		w.keepSkeleton(int(c.p.cfg.MaxObservedFrameSize))
	}
	dropped, failure := walkResponse(w, c.p, p.key, p.version)
	if !w.bad {
		skeleton = w.keep
	}
	if dropped {
		c.p.stats.endpointsDropped.Add(1)
		if c.p.once.first("endpoints_dropped", p.key) {
			c.log.Warn("broker addresses (NodeEndpoints) in a streamed response do not fit in place once rewritten "+
				"(kproxy's advertised host is longer than the broker's): dropped, so clients dial the new leader at the "+
				"address they have for it, or ask for Metadata (logged once per api, then counted)",
				zap.String("api", decode.APIName(p.key)), zap.Int16("api_version", p.version))
		}
	}
	if failure != nil {
		c.rewriteFailed(p, failure)
	}
	return skeleton, w.err
}

// rewriteFailed counts a response forwarded untouched because kproxy could
// not rewrite it, and logs the first of each api and version.
func (c *conn) rewriteFailed(p pending, err error) {
	c.p.stats.rewriteFailures.Add(1)
	if c.p.once.first("rewrite", p.key, p.version) {
		c.log.Warn("response not rewritten: it does not parse; forwarded untouched, so the client may learn "+
			"broker addresses or versions kproxy did not vet (logged once per api and version, then counted)",
			zap.String("api", decode.APIName(p.key)), zap.Int16("api_version", p.version), zap.Error(err))
	}
}

var errMismatch = errors.New("proxy: response correlation id mismatch")

// logMismatch explains a response whose correlation id is not the one of
// the oldest request in flight (head, when ok). Kafka answers a
// connection's requests in order, so kproxy cannot tell which request the
// response belongs to and closes the connection: once per connection.
func (c *conn) logMismatch(corrID int32, head pending, ok bool) {
	if !ok {
		c.p.rate.log(c.log, zapcore.ErrorLevel, "mismatch", "response from the broker with no request in flight; closing the connection (the client "+
			"may have sent a Produce with acks=0 whose acks kproxy could not read)",
			zap.Int32("corr_id", corrID))
		return
	}
	c.p.rate.log(c.log, zapcore.ErrorLevel, "mismatch", "response correlation id does not match the oldest request in flight; closing the connection",
		zap.Int32("corr_id", corrID), zap.Int32("want_corr_id", head.corrID),
		zap.String("want_api", decode.APIName(head.key)), zap.Int16("want_api_version", head.version),
		zap.Int("in_flight", c.pending.len()))
}

// exchange builds the observed exchange of a request and its response.
// Without a response (nil), Response is nil and ResponseAt zero, as
// decode.Exchange documents. Its times carry no monotonic clock reading (Round(0)):
// durations computed from them must be the same live as when replayed from
// a journal, which keeps wall-clock times only.
func (c *conn) exchange(p pending, response []byte, at time.Time) *decode.Exchange {
	if len(response) == 0 {
		response = nil
		if !p.oversized {
			at = time.Time{}
		}
	}
	return &decode.Exchange{
		ConnID:        c.id,
		ClientAddr:    c.clientAddr,
		BrokerID:      c.brokerID,
		APIKey:        p.key,
		APIVersion:    p.version,
		CorrelationID: p.corrID,
		ClientID:      p.clientID,
		ClientCert:    c.clientCert,
		RequestAt:     p.at.Round(0),
		ResponseAt:    at.Round(0),
		Request:       p.request,
		Response:      response,
		Oversized:     p.oversized,
	}
}

// observeUnanswered hands observed requests that got no response (the
// connection ended first) to the observers, so that a join that never
// completed is still seen.
func (c *conn) observeUnanswered() {
	for _, p := range c.pending.drain() {
		if p.request != nil || p.oversized {
			c.p.observe(c.exchange(p, nil, time.Time{}))
		}
		p.held.release()
	}
}
