package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kproxy-dev/kproxy/decode"
)

// requestPump forwards requests from the client to the broker, starting
// with the one whose size prefix serve already read (received at at).
// After a SaslHandshake v0 it forwards bare SASL tokens, or the rest of the
// connection as opaque bytes (saslv0.go). It ends on the first error, on a frame it refuses, or
// with errStopped.
func (c *conn) requestPump(ctx context.Context, br *bufio.Reader, prefix [4]byte, size int32, at time.Time) error {
	mode := saslOff
	for {
		if !c.frameStart() {
			return errStopped
		}
		var err error
		await := true
		switch {
		case mode == saslTokens:
			err = c.forwardToken(br, prefix, size, at)
		case c.reauthDue(at):
			if err = c.reauthenticate(ctx); err == nil {
				await, err = c.forwardRequest(br, prefix, size, at)
			}
		default:
			await, err = c.forwardRequest(br, prefix, size, at)
		}
		if err == nil && await {
			mode, err = c.awaitSASL()
		}
		if err != nil {
			return err
		}
		if c.frameEnd() {
			return errStopped
		}
		if mode == saslOpaque {
			return c.pipeClient(br)
		}
		prefix, size, at, err = c.nextFrameSize()
		if err != nil {
			c.prefixCut(err)
			if c.isStopping() {
				return errStopped
			}
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				c.log.Debug("client closed the connection")
			} else {
				c.p.rate.log(c.log, zapcore.InfoLevel, "client_failed", "client connection failed", zap.Error(err))
			}
			return err
		}
	}
}

// minRequest is the size of the fixed part of a request header: api key,
// api version, correlation id.
const minRequest = 8

// forwardRequest forwards one request frame. await reports a SaslHandshake
// v0, whose response decides how the next client frame is read.
func (c *conn) forwardRequest(br *bufio.Reader, prefix [4]byte, size int32, at time.Time) (await bool, err error) {
	if err := c.checkSize(prefix, size, minRequest, c.p.cfg.MaxFrameSize, "request"); err != nil {
		return false, err
	}
	c.setFrameDeadline(at.Add(c.p.cfg.IdleTimeout)) // forwardWhole shortens it
	fixed, err := br.Peek(minRequest)
	if err != nil {
		c.requestCut(err)
		c.log.Debug("client closed mid-request", zap.Error(err))
		return false, err
	}
	key := int16(binary.BigEndian.Uint16(fixed))
	p := pending{
		key:     key,
		version: int16(binary.BigEndian.Uint16(fixed[2:])),
		corrID:  int32(binary.BigEndian.Uint32(fixed[4:])),
		at:      at,
	}
	if c.tooLargeForGroup(fixed, size) {
		return false, c.refuseGroupFrame(fixed, size)
	}
	if saslAPI(key) && c.p.cfg.UpstreamSASL.Enabled() {
		return false, c.refuseClientSASL(key)
	}
	if key == int16(kmsg.ApiVersions) && p.version > versionCaps[int16(kmsg.ApiVersions)] {
		return false, c.refuseApiVersions(br, size, p) // answered, not forwarded
	}
	c.p.stats.requestFrames.Add(1)
	c.p.stats.bytesFromClients.Add(uint64(size) + 4)

	if decode.RequestOnly(key) {
		if observeRequestOnly && size <= min(maxObservedRequest, c.p.cfg.MaxObservedFrameSize) && c.observable(p) {
			return false, c.forwardObservedRequest(br, prefix, size, p)
		}
		// Larger (thousands of partitions in one Fetch): streamed and not
		// observed; the diagnosis does without this consumer's positions.
	} else if handshake := key == int16(kmsg.SASLHandshake) && p.version == 0; handshake || observed(key) && c.observable(p) {
		if size <= c.p.cfg.MaxObservedFrameSize {
			return handshake, c.forwardWhole(br, prefix, size, p)
		}
		if handshake {
			// A mechanism name of megabytes is not SASL.
			c.p.stats.oversizedFrames.Add(1)
			c.p.rate.log(c.log, zapcore.ErrorLevel, "oversized", "SaslHandshake request larger than the maximum observed frame size; closing the connection",
				zap.Int32("size", size), zap.Int32("max_observed_frame_size", c.p.cfg.MaxObservedFrameSize))
			return false, errOversized
		}
		// Too large to keep: streamed like a Produce, and observed as
		// an exchange that says only that it happened.
		c.unobserved(&p, "unobserved", "request of interest larger than the maximum observed frame size: forwarded "+
			"without being observed", size, zap.Int32("max_observed_frame_size", c.p.cfg.MaxObservedFrameSize))
	}

	var consumed []byte
	expect := true
	if key == int16(kmsg.Produce) {
		// Produce with acks=0 gets no response: queueing it would make
		// the next response look mismatched.
		var err error
		consumed, expect, err = c.produceExpectsResponse(br, int(size))
		if err != nil {
			return false, err
		}
	}
	if expect {
		c.pending.push(p)
	}
	rest := int(size) - len(consumed)
	if _, err := streamFrame(c.upstream, br, c.client, prefix, consumed, rest, c.p.copyMode); err != nil {
		c.requestCut(err)
		c.log.Debug("request forwarding failed", zap.Int16("api_key", key), zap.Error(err))
		return false, err
	}
	return false, nil
}

// observable reports whether kproxy can decode an exchange of this API at
// this version, and logs once per API and version when it cannot: the
// broker supports a version newer than kmsg's, which clients use through
// kproxy as they would directly, unobserved.
func (c *conn) observable(p pending) bool {
	if observable(p.key, p.version) {
		return true
	}
	if c.p.once.first("unobservable", p.key, p.version) {
		c.log.Info("request at a version newer than kproxy decodes: forwarded without being observed "+
			"(logged once per api and version)", zap.String("api", decode.APIName(p.key)), zap.Int16("api_version", p.version))
	}
	return false
}

// forwardWhole forwards a request frame read whole: an observed request,
// whose bytes are kept for the observers, or a SaslHandshake v0, whose
// mechanism is kept for the token exchange that follows (saslv0.go). Its
// share of the buffer budget is held until the exchange leaves the
// connection.
func (c *conn) forwardWhole(br *bufio.Reader, prefix [4]byte, size int32, p pending) error {
	frame, h, err := c.readWhole(br, prefix, size, p.at)
	if err != nil {
		return err
	}
	p.held = h
	if p.key == int16(kmsg.SASLHandshake) { // only v0 comes here: SASL is never observed
		c.saslHandshakeV0(&p, frame[4:])
	} else {
		p.keepRequest(frame)
	}
	c.pending.push(p)
	return c.writeRequest(frame, p.key)
}

// maxObservedRequest bounds the request-only frames (Fetch) kproxy reads
// whole to observe: a consumer's Fetch names its partitions in well under
// this; a larger one (thousands of partitions in one request) is streamed
// and not observed, rather than copied.
const maxObservedRequest = 256 << 10

// forwardObservedRequest forwards a request read whole whose response is
// streamed like any other (Fetch): the request alone is handed to the
// observers, once written, without a response.
func (c *conn) forwardObservedRequest(br *bufio.Reader, prefix [4]byte, size int32, p pending) error {
	frame, h, err := c.readWhole(br, prefix, size, p.at)
	if err != nil {
		return err
	}
	defer h.release()
	c.pending.push(p) // without its request: the response is not kept
	if err := c.writeRequest(frame, p.key); err != nil {
		return err
	}
	p.keepRequest(frame)
	c.p.observe(c.exchange(p, nil, time.Time{}))
	return nil
}

// readWhole reads a request frame whole, as its bytes arrive, within the
// frame read timeout from at and with its size taken from the buffer
// budget first; the caller releases the hold.
func (c *conn) readWhole(br *bufio.Reader, prefix [4]byte, size int32, at time.Time) ([]byte, *hold, error) {
	deadline := at.Add(c.p.cfg.FrameReadTimeout)
	c.setFrameDeadline(deadline)
	h, err := takeHold(c.p.budget, 4+int64(size), deadline, c.done)
	if err != nil {
		c.requestCut(err)
		return nil, nil, err
	}
	frame, err := readFrame(br, prefix, size)
	if err != nil {
		h.release()
		c.requestCut(err)
		c.log.Debug("client closed mid-request", zap.Error(err))
		return nil, nil, err
	}
	return frame, h, nil
}

// keepRequest keeps a request frame read whole, and its client id, for
// the observers.
func (p *pending) keepRequest(frame []byte) {
	if h, err := decode.ParseRequestHeader(frame[4:]); err == nil {
		p.clientID = h.ClientIDString()
	}
	p.request = frame[4:]
}

// writeRequest writes a request frame read whole to the broker.
func (c *conn) writeRequest(frame []byte, key int16) error {
	if _, err := writeConn(c.upstream, frame); err != nil {
		// responsePump logs the broker side's failure.
		c.log.Debug("request write failed", zap.Int16("api_key", key), zap.Error(err))
		return err
	}
	return nil
}

// unobserved marks an exchange of interest forwarded without being
// observed (too large to keep, or no buffer budget for its response):
// streamed, and handed to the observers as an exchange that says only that
// it happened. It counts it and logs why, at most once a second per kind.
func (c *conn) unobserved(p *pending, kind, msg string, size int32, why zap.Field) {
	p.oversized = true
	c.p.stats.unobservedFrames.Add(1)
	c.p.rate.warn(c.log, kind, msg, zap.String("api", decode.APIName(p.key)), zap.Int16("api_version", p.version),
		zap.Int32("size", size), why)
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
	if acks, ok := decode.ProduceAcks(peek); ok {
		return nil, acks != 0, nil
	}
	if len(peek) == size {
		c.acksUnknown(peek, size)
		return nil, true, nil
	}
	consumed := make([]byte, min(size, decode.MaxProduceHead))
	if _, err := io.ReadFull(br, consumed); err != nil {
		return nil, false, err
	}
	acks, ok := decode.ProduceAcks(consumed)
	if !ok {
		c.acksUnknown(consumed, size)
	}
	return consumed, !ok || acks != 0, nil
}

// acksUnknown logs, once per Produce version, a Produce request whose acks
// kproxy cannot read: it expects a response, which is right unless acks is
// 0, and then the next response closes the connection as a mismatch.
func (c *conn) acksUnknown(frame []byte, size int) {
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	if c.p.once.first("acks", version) {
		c.log.Warn("cannot read acks from a Produce request; forwarded expecting a response (if it had acks=0, the "+
			"connection will close on a correlation id mismatch; logged once per version)",
			zap.Int16("api_version", version), zap.Int("size", size))
	}
}

// maxFrame is the largest size a frame prefix can hold.
const maxFrame = math.MaxInt32

// checkSize refuses frames larger than max (negative sizes included) or
// too small to be Kafka, logging why. The connection closes after it, so
// the line is logged once per connection.
func (c *conn) checkSize(prefix [4]byte, size, min, max int32, what string) error {
	if size >= min && size <= max {
		return nil
	}
	if size > max || size < 0 {
		c.p.stats.oversizedFrames.Add(1)
		c.p.rate.log(c.log, zapcore.ErrorLevel, "oversized", what+" frame larger than the maximum frame size; closing the connection",
			zap.Int64("size", int64(uint32(size))), zap.Int32("max_frame_size", max),
			zap.String("prefix", describePrefix(prefix)))
		return errOversized
	}
	c.p.stats.shortFrames.Add(1)
	c.p.rate.log(c.log, zapcore.ErrorLevel, "short", what+" frame too short to be Kafka; closing the connection",
		zap.Int32("size", size), zap.String("prefix", describePrefix(prefix)))
	return errShortFrame
}

// tooLargeForGroup reports whether the request that fixed starts is a group
// request larger than MaxGroupFrameSize.
func (c *conn) tooLargeForGroup(fixed []byte, size int32) bool {
	return decode.GroupAPI(int16(binary.BigEndian.Uint16(fixed))) && size > c.p.cfg.MaxGroupFrameSize
}

// refuseGroupFrame refuses a group request larger than MaxGroupFrameSize:
// counted, logged (at most once a second) and its connection closed
// before any of it is forwarded, as a frame above MaxFrameSize is.
// fixed is the request's first minRequest bytes.
func (c *conn) refuseGroupFrame(fixed []byte, size int32) error {
	c.p.stats.oversizedFrames.Add(1)
	c.p.rate.log(c.log, zapcore.ErrorLevel, "oversized_group", "group request larger than max-group-frame-size, "+
		"which no real consumer group reaches; closing the connection (raise --max-group-frame-size if this group is real)",
		zap.String("api", decode.APIName(int16(binary.BigEndian.Uint16(fixed)))), zap.Int16("api_version", int16(binary.BigEndian.Uint16(fixed[2:]))),
		zap.Int32("size", size), zap.Int32("max_group_frame_size", c.p.cfg.MaxGroupFrameSize))
	return errOversized
}

var (
	errOversized  = errors.New("proxy: frame larger than the maximum frame size")
	errShortFrame = errors.New("proxy: frame shorter than a header")
)
