package proxy

import (
	"bufio"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

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
	// clientIP is the client's IP address, the key of the per-IP
	// connection limit (limits.go).
	clientIP string
	// clientCert is the subject of the client's TLS certificate (mutual
	// TLS), "" without one; set by acceptTLS before the pumps start.
	clientCert string
	log        *zap.Logger
	// br reads from the client; owned by the request pump.
	br *bufio.Reader
	// done is closed by close: a frame waiting for the buffer budget
	// stops waiting.
	done chan struct{}
	// lastActive is when bytes last moved, in either direction, in Unix
	// nanoseconds (the idle timeout, deadlines.go).
	lastActive atomic.Int64

	pending inflight
	// respDone is closed when responsePump returns.
	respDone chan struct{}
	// saslNext carries, after a SaslHandshake v0 or a bare SASL token,
	// how the request pump reads the next client frame (saslv0.go). Made
	// by the request pump before it queues the handshake.
	saslNext chan saslMode
	// The SASL v0 token exchange under way; owned by the response pump.
	saslMechanism string
	saslLeft      int // token round trips left
	// sasl is the upstream SASL session when kproxy authenticates
	// upstream itself (reauth.go); owned by the request pump once the
	// pumps run. internalCorr numbers kproxy's own requests.
	sasl         saslSession
	internalCorr int32

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
func (c *conn) serve(ctx context.Context) {
	defer c.close()
	if c.p.tls.certs != nil && !c.acceptTLS(ctx) {
		return
	}
	c.br = bufio.NewReaderSize(readerOf(c.client), readBufSize)
	c.active(time.Now())

	// Clients speak first. Check the first frame's size and read its
	// header before dialing, so that a TLS client, an HTTP request or a
	// port scanner costs no upstream connection.
	prefix, size, _, err := c.nextFrameSize()
	if err != nil {
		c.prefixCut(err)
		c.log.Debug("client closed before its first request", zap.Error(err))
		return
	}
	if isTLSHello(prefix) {
		c.p.stats.tlsHellos.Add(1)
		c.p.rate.warn(c.log, "tls_hello", "TLS ClientHello on a plaintext listener: this kproxy's listeners speak plaintext Kafka; "+
			"configure the client without TLS (security.protocol=PLAINTEXT or SASL_PLAINTEXT), or start kproxy "+
			"with --tls-cert and --tls-key; closing")
		return
	}
	if err := c.checkSize(prefix, size, minRequest, c.p.cfg.MaxFrameSize, "request"); err != nil {
		return
	}
	c.setFrameDeadline(time.Now().Add(c.p.cfg.FrameReadTimeout))
	fixed, err := c.br.Peek(minRequest)
	if err != nil {
		c.requestCut(err)
		c.log.Debug("client closed mid-request", zap.Error(err))
		return
	}
	if c.tooLargeForGroup(fixed, size) {
		c.refuseGroupFrame(fixed, size) // before dialing, as for any frame kproxy refuses
		return
	}
	up, err := c.p.dialUpstream(ctx, c.brokerID, c.log)
	if err != nil {
		// As a broker that is down would: a reset, which clients retry
		// (franz-go reads an orderly close before the first response
		// as ErrFirstReadEOF, "is TLS missing?", and gives up).
		resetOnClose(c.client)
		return
	}
	if err := c.authenticateUpstream(ctx, up); err != nil {
		up.Close()
		return
	}
	if !c.setUpstream(up) {
		// Closed by a shutdown timeout while dialing.
		up.Close()
		return
	}

	respDone := make(chan struct{})
	c.respDone = respDone
	go func() {
		defer close(respDone)
		c.responsePump()
	}()
	// The first request's time is taken after the dial, which is not
	// the broker's.
	err = c.requestPump(ctx, c.br, prefix, size, time.Now())
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
	close(c.done)
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
