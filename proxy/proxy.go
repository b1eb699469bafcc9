// Package proxy moves Kafka bytes between clients and brokers: a bootstrap
// listener and one listener per broker node (opened at startup by broker
// discovery, and as responses name new nodes), a request pump and a
// response pump per connection, in-flight tracking by correlation id,
// address rewriting so that clients only ever dial kproxy, ApiVersions
// clamping (versionPolicy, the one list of what kproxy changes on the
// wire), and limits. Frames not read whole are streamed: on Linux with
// splice(2) between plaintext sockets, and with raw system calls that do
// not wake Go's monitor thread at every frame (splice_linux.go,
// rawio_linux.go). Exchanges of interest (decode.Observed) are handed
// out raw, undecoded, through a Queue bounded in exchanges and bytes that
// never blocks traffic; its reader (the pipeline) also learns what was
// dropped. SASL is forwarded and never observed, including the bare tokens
// that follow a SaslHandshake v0 (saslv0.go); or, with UpstreamSASL, kproxy
// authenticates every broker connection itself and renews its sessions
// (upstreamsasl.go, reauth.go). TLS is optional on either side (tls.go):
// listeners, and brokers dialed with TLS verifying the name each
// advertises (upstream.go), the files of both sides reloaded as they
// change (certreload.go), and SNI routing of every node through the
// bootstrap listener (sni.go).
package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kproxy-dev/kproxy/decode"
)

// Proxy is a Kafka proxy. Create it with New, run it with Run.
type Proxy struct {
	cfg        Config
	log        *zap.Logger
	advertise  string
	listenHost string
	portBase   int
	bootstrap  net.Listener
	copyMode   copyMode // copySplice; tests set copyPooled too
	// dial connects to a broker; New sets it to a net.Dialer bounded by
	// DialTimeout. Tests replace it before Run.
	dial func(ctx context.Context, addr string) (net.Conn, error)
	// tls is the TLS setup of both sides; its zero value is plaintext.
	tls tlsState

	stats    counters
	nextConn atomic.Uint64
	nextSeed atomic.Uint32
	queue    *Queue
	// dropLogEvery is how often drops are logged at most
	// (defaultDropLogEvery; tests shorten it before Run).
	dropLogEvery time.Duration

	// budget bounds the request frames read whole (MaxBufferedBytes).
	budget *budget
	// rate limits the lines clients can make repeat (ratelog.go).
	rate rateLog

	mu    sync.Mutex
	nodes map[int32]*node
	conns map[*conn]struct{}
	// perIP counts the connections in conns by client IP (limits.go).
	perIP   map[string]int
	closing bool
	running bool
	// pendingAccepts are node listeners opened (listenNode) whose accept
	// loop Run has yet to start; acceptWake tells Run there are some.
	pendingAccepts []pendingAccept
	acceptWake     chan struct{}

	accepts sync.WaitGroup // accept loops
	serving sync.WaitGroup // connections

	once logOnce
}

// New validates cfg, applies its defaults and opens the bootstrap listener,
// so that Addr is valid before Run. A nil log logs nothing. Exchanges of
// interest go to Queue, whose reader must keep up or they are dropped.
func New(cfg Config, log *zap.Logger) (*Proxy, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = zap.NewNop()
	}
	ts, err := newTLSState(cfg, log)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("proxy: listen %s: %w", cfg.Listen, err)
	}
	host, _, _ := net.SplitHostPort(cfg.Listen)
	base := cfg.BrokerPortBase
	if base == 0 {
		base = ln.Addr().(*net.TCPAddr).Port + 1
	}
	dialer := &net.Dialer{Timeout: cfg.DialTimeout}
	p := &Proxy{
		cfg:          cfg,
		dial:         func(ctx context.Context, addr string) (net.Conn, error) { return dialer.DialContext(ctx, "tcp", addr) },
		tls:          ts,
		log:          log,
		advertise:    cfg.advertiseHost(),
		listenHost:   host,
		portBase:     base,
		bootstrap:    ln,
		dropLogEvery: defaultDropLogEvery,
		nodes:        make(map[int32]*node),
		conns:        make(map[*conn]struct{}),
		perIP:        make(map[string]int),
		acceptWake:   make(chan struct{}, 1),
		budget:       newBudget(cfg.MaxBufferedBytes),
		rate:         rateLog{every: defaultRateLogEvery},
	}
	p.queue = newQueue(cfg.ObserverQueue, &p.stats)
	return p, nil
}

// Queue is the queue of exchanges of interest, for its one reader. It
// ends (io.EOF) once Run has stopped every connection.
func (p *Proxy) Queue() *Queue { return p.queue }

// Addr is the bootstrap listener's address.
func (p *Proxy) Addr() net.Addr { return p.bootstrap.Addr() }

// Stats returns a snapshot of the proxy's counters.
func (p *Proxy) Stats() Stats {
	s := p.stats.snapshot()
	p.budget.mu.Lock()
	s.BufferedBytes = p.cfg.MaxBufferedBytes - p.budget.left
	p.budget.mu.Unlock()
	s.BufferWaits = p.budget.waits.Load()
	return s
}

// Run serves until ctx is done. Unless DisableBrokerDiscovery is set, it
// first starts broker discovery in the background. Once ctx is done it
// stops accepting, abandons dials under way, stops reading new requests,
// waits up to ShutdownTimeout for the responses to requests already
// forwarded, closes every connection, closes the Queue (its reader still
// gets every exchange queued, then io.EOF) and returns nil. It returns an
// error only when called twice.
func (p *Proxy) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		return errors.New("proxy: Run called twice")
	}
	p.running = true
	p.mu.Unlock()

	reporting := make(chan struct{})
	stopReports := make(chan struct{})
	go func() {
		defer close(reporting)
		p.reportDrops(stopReports)
	}()

	p.log.Info("kproxy listening", zap.Stringer("addr", p.Addr()), zap.Strings("upstreams", p.cfg.Upstreams),
		zap.String("advertise", p.advertise))
	if p.cfg.UpstreamSASL.Enabled() {
		p.log.Info("authenticating every broker connection as kproxy's own SASL user; clients connect without SASL",
			zap.Object("upstream_sasl", p.cfg.UpstreamSASL))
	}
	if p.cfg.advertiseGuessed() {
		p.log.Warn("listening on every interface but telling clients to dial 127.0.0.1: clients on other hosts "+
			"or in other containers will fail to reach the brokers; set the advertised host (--advertise)",
			zap.Stringer("addr", p.Addr()))
	}
	p.logTLS()
	reloading := make(chan struct{})
	go func() {
		defer close(reloading)
		p.tls.watch(ctx) // ends when ctx is done; at once without TLS files
	}()
	p.accepts.Add(1)
	go p.acceptLoop(ctx, p.bootstrap, -1)
	discovered := make(chan struct{})
	go func() {
		defer close(discovered)
		if !p.cfg.DisableBrokerDiscovery {
			p.discoverBrokers(ctx)
		}
	}()

	// Run owns every accept loop, so that each connection is served with
	// ctx: node listeners opened since (by discovery, or a response naming
	// a new node) are handed here, and those left when ctx is done are
	// closed by shutdown.
	for ctx.Err() == nil {
		select {
		case <-p.acceptWake:
			p.startAccepts(ctx)
		case <-ctx.Done():
		}
	}
	<-discovered // ends as soon as ctx is done: its dial and reads stop
	<-reloading
	p.shutdown()
	p.queue.end() // no connection is left to queue more
	close(stopReports)
	<-reporting
	return nil
}

// shutdown stops the listeners and drains the connections.
func (p *Proxy) shutdown() {
	p.mu.Lock()
	p.closing = true
	p.bootstrap.Close()
	for _, n := range p.nodes {
		if n.ln != nil {
			n.ln.Close()
		}
	}
	// Listeners opened after Run stopped starting accept loops: closed
	// above, they will never have one.
	for range p.pendingAccepts {
		p.accepts.Done()
	}
	p.pendingAccepts = nil
	conns := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	p.accepts.Wait()

	p.log.Info("kproxy shutting down", zap.Int("connections", len(conns)), zap.Duration("timeout", p.cfg.ShutdownTimeout))
	for _, c := range conns {
		c.stop()
	}
	done := make(chan struct{})
	go func() {
		p.serving.Wait()
		close(done)
	}()
	t := time.NewTimer(p.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		p.mu.Lock()
		p.log.Warn("shutdown timeout: closing connections with requests still in flight", zap.Int("connections", len(p.conns)))
		for c := range p.conns {
			c.close()
		}
		p.mu.Unlock()
		<-done
	}
}

// startAccepts starts an accept loop for each node listener opened since
// the last call (listenNode).
func (p *Proxy) startAccepts(ctx context.Context) {
	p.mu.Lock()
	pending := p.pendingAccepts
	p.pendingAccepts = nil
	p.mu.Unlock()
	for _, a := range pending {
		go p.acceptLoop(ctx, a.ln, a.brokerID)
	}
}

// pendingAccept is a node listener waiting for Run to start its accept
// loop; p.accepts already counts it.
type pendingAccept struct {
	ln       net.Listener
	brokerID int32
}

// acceptLoop accepts connections on ln for the broker node brokerID (-1:
// bootstrap) until ln is closed, and serves each with ctx, Run's.
func (p *Proxy) acceptLoop(ctx context.Context, ln net.Listener, brokerID int32) {
	defer p.accepts.Done()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off as
			// net/http does rather than spin.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			p.stats.acceptErrors.Add(1)
			p.rate.log(p.log, zapcore.ErrorLevel, "accept", "accept failed; retrying", zap.Stringer("listener", ln.Addr()),
				zap.Error(err), zap.Duration("retry_in", delay))
			time.Sleep(delay)
			continue
		}
		delay = 0
		p.startConn(ctx, nc, brokerID)
	}
}

// startConn registers and serves a new client connection.
func (p *Proxy) startConn(ctx context.Context, nc net.Conn, brokerID int32) {
	id := p.nextConn.Add(1)
	c := &conn{
		p:          p,
		id:         id,
		brokerID:   brokerID,
		client:     nc,
		clientAddr: nc.RemoteAddr().String(),
		done:       make(chan struct{}),
	}
	c.clientIP = hostOf(c.clientAddr)
	c.log = p.log.With(zap.Uint64("conn_id", id), zap.String("client_addr", c.clientAddr), zap.Int32("broker_id", brokerID))
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		nc.Close()
		return
	}
	if limit := p.admit(c); limit != "" {
		p.mu.Unlock()
		p.refuse(c, limit)
		return
	}
	p.serving.Add(1)
	p.mu.Unlock()
	p.stats.connsTotal.Add(1)
	p.stats.connsOpen.Add(1)

	go func() {
		defer p.serving.Done()
		defer p.stats.connsOpen.Add(-1)
		defer p.forget(c)
		c.serve(ctx)
	}()
}

// dialUpstream connects to the broker behind brokerID, or to a seed broker
// for the bootstrap listener (-1), trying each seed once starting after
// the one used last. The connection is TLS when UpstreamTLS is set
// (dialBroker), verified against the name that broker advertises. Failures
// are logged here.
func (p *Proxy) dialUpstream(ctx context.Context, brokerID int32, log *zap.Logger) (net.Conn, error) {
	var addrs []string
	if brokerID < 0 {
		start := int(p.nextSeed.Add(1))
		for i := range p.cfg.Upstreams {
			addrs = append(addrs, p.cfg.Upstreams[(start+i)%len(p.cfg.Upstreams)])
		}
	} else {
		addr, ok := p.upstreamOf(brokerID)
		if !ok {
			log.Error("no address known for broker node; closing the client connection")
			return nil, fmt.Errorf("proxy: no address for node %d", brokerID)
		}
		addrs = []string{addr}
	}
	var errs []error
	for _, addr := range addrs {
		nc, err := p.dialBroker(ctx, addr)
		if err == nil {
			return nc, nil
		}
		if ctx.Err() != nil {
			log.Debug("shutting down: dial to the broker abandoned; closing the client connection", zap.String("upstream", addr))
			return nil, err
		}
		p.stats.dialFailures.Add(1)
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	p.rate.log(log, zapcore.ErrorLevel, "dial", "cannot reach the broker; resetting the client connection so that it retries",
		zap.Strings("upstreams", addrs), zap.Error(err))
	return nil, err
}

// observe queues an exchange for the Queue's reader (see Queue.offer).
func (p *Proxy) observe(x *decode.Exchange) { p.queue.offer(x, p.cfg.ObserverQueueBytes) }
