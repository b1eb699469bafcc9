package proxy

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// errIdle ends a connection idle for longer than IdleTimeout.
var errIdle = errors.New("proxy: connection idle")

// Read deadlines on the client socket, set by the request pump only:
//   - between frames, IdleTimeout after the pump starts waiting; when it
//     passes, the connection closes unless bytes moved meanwhile in either
//     direction or a request is in flight (a JoinGroup can wait minutes);
//   - within a frame of interest (read whole), FrameReadTimeout after its
//     first byte: a client that trickles a frame cannot hold its buffer;
//   - within a streamed frame, IdleTimeout after its first byte;
//   - on shutdown, stop sets a deadline in the past between frames. The
//     setters below never replace it.
//
// The broker socket has no read deadline, on purpose. A broker holds some
// responses for as long as the request allows: a Fetch up to its MaxWait
// (fetch.max.wait.ms, any length the client sets), a JoinGroup up to the
// group's rebalance timeout (max.poll.interval.ms, 5 minutes by default,
// often far more), and a connection with nothing in flight is silent for
// as long as the client is. A deadline right for one of these would cut
// another, or kproxy would have to decode each request's timeout. Clients
// already bound every request they send (request.timeout.ms and the
// timeouts in the requests themselves): a client that gives up closes its
// connection, and kproxy then closes the broker's. A broker host that
// vanishes without closing or resetting is found by TCP keepalive, on by
// default on the connections kproxy dials (net.Dialer: probes after 15 s
// idle, every 15 s), whose read then fails.

// setFrameDeadline sets the read deadline of the frame in progress, unless
// shutdown set its own between frames.
func (c *conn) setFrameDeadline(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping && !c.inFrame {
		return
	}
	c.client.SetReadDeadline(t)
}

// armIdle sets the idle deadline before the next frame, unless shutdown
// set its own.
func (c *conn) armIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopping {
		c.client.SetReadDeadline(time.Now().Add(c.p.cfg.IdleTimeout))
	}
}

// active records that bytes moved on the connection, in either direction,
// at t.
func (c *conn) active(t time.Time) { c.lastActive.Store(t.UnixNano()) }

// nextFrameSize reads the size prefix of the next request and returns when
// it came, closing the connection (errIdle) when it stays idle for
// IdleTimeout.
func (c *conn) nextFrameSize() ([4]byte, int32, time.Time, error) {
	for {
		c.armIdle()
		prefix, size, err := frameSize(c.br)
		if err == nil {
			at := time.Now()
			c.active(at)
			return prefix, size, at, nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || c.isStopping() {
			return prefix, size, time.Time{}, err
		}
		idle := time.Since(time.Unix(0, c.lastActive.Load()))
		if idle < c.p.cfg.IdleTimeout || c.pending.len() > 0 {
			continue
		}
		c.p.stats.idleCloses.Add(1)
		// Info: closing idle connections is routine, as a broker's
		// connections.max.idle.ms is.
		c.p.rate.log(c.log, zapcore.InfoLevel, "idle", "client connection idle; closing it (idle timeout)",
			zap.Duration("idle_timeout", c.p.cfg.IdleTimeout))
		return prefix, size, time.Time{}, errIdle
	}
}

// requestCut counts a request frame the client did not finish: it closed
// or reset the connection mid-frame (truncated), or was too slow (frame
// read timeout, logged).
func (c *conn) requestCut(err error) {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errBudgetTimeout):
		if c.isStopping() {
			return
		}
		c.p.stats.frameTimeouts.Add(1)
		c.p.rate.warn(c.log, "frame_timeout", "client too slow to send a request frame; closing the connection "+
			"(frame read timeout)", zap.Duration("frame_read_timeout", c.p.cfg.FrameReadTimeout), zap.Error(err))
	case truncated(err):
		c.p.stats.truncatedFrames.Add(1)
	}
}

// prefixCut counts a size prefix the client did not finish: it closed after
// one to three of its bytes. Ending between frames is not counted.
func (c *conn) prefixCut(err error) {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		c.p.stats.truncatedFrames.Add(1)
	}
}

// truncated reports whether err ended a frame before its last byte because
// the peer closed or reset the connection.
func truncated(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET)
}
