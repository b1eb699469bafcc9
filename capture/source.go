// Package capture reads packet captures (pcap and pcapng, as tcpdump and
// Wireshark write them) of Kafka traffic and hands out the exchanges in
// them as the proxy would have observed them: the same APIs, each request
// with its response, with the times the capture saw them. A Source is a
// pipeline.Source, so a capture tells the story a journal of the same
// traffic tells, through the same pipeline.
//
// Each TCP connection to a broker port is reassembled in order
// (reassembly.go: retransmissions taken once, segments captured out of
// order put back in order, bytes the capture lost skipped as a gap), cut
// into frames (frames.go: Produce and Fetch payload skipped by count,
// never copied) and its requests paired with their responses by
// correlation id (conn.go). A connection already open when the capture
// began, or one whose frames a gap swallowed, finds its frames again at
// the start of a TCP segment that plausibly starts one: a request of an
// API and version kmsg knows with a printable client id, a response whose
// correlation id is that of a request awaiting it. What a gap lost is
// counted and reported as lost, never guessed: an exchange is handed out
// only when both its frames were read whole.
//
// TLS connections are recognised by their record headers, counted and
// skipped: there is no key to read them with. SASL payloads are never
// kept, as the proxy never keeps them.
package capture

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/proxy"
)

// Config says how a Source reads captures.
type Config struct {
	// BrokerPorts are the TCP ports of the brokers known before reading;
	// the ports the Metadata and FindCoordinator responses read name are
	// added as they come. Empty: 9092.
	BrokerPorts []uint16
	// MaxFrameSize is the largest frame taken for a Kafka frame (a larger
	// size means the reader lost track of the frames); MaxObservedFrameSize
	// the largest frame of interest kept, as the proxy's settings of the
	// same names. Zero: the proxy's defaults.
	MaxFrameSize         int
	MaxObservedFrameSize int
	// IdleTimeout is how long, by the capture's clock, a connection may
	// carry nothing before it is taken for ended (its end was not
	// captured). Zero: 15 minutes, longer than brokers keep idle
	// connections (connections.max.idle.ms, 10 minutes).
	IdleTimeout time.Duration
}

// DefaultBrokerPort is the broker port a Source knows when given none.
const DefaultBrokerPort = 9092

// Stats counts what a Source read.
type Stats struct {
	// Packets and Bytes read from the captures (bytes as captured).
	Packets, Bytes uint64
	// Other counts the packets that are not TCP segments to or from a
	// broker port.
	Other uint64
	// Connections counts the Kafka connections seen; Open those not ended.
	Connections uint64
	Open        int
	// TLSConnections were skipped, and their TLSBytes with them.
	TLSConnections, TLSBytes uint64
	// SASLv0Connections were skipped after a SaslHandshake v0, whose
	// tokens travel without Kafka headers.
	SASLv0Connections uint64
	// Exchanges handed out.
	Exchanges uint64
	// Unfinished counts the requests of interest still awaiting their
	// response when the capture ended, or when their connection went
	// quiet for IdleTimeout: they are not told.
	Unfinished uint64
	// Lost counts the exchanges known lost in gaps, and one for each
	// stretch of a connection whose frames a gap swallowed (Untracked):
	// what was in it is unknown.
	Lost      uint64
	Untracked uint64
	// Gaps counts the stretches of bytes missing from the capture (lost by
	// it, or cut by its snap length), GapBytes their bytes.
	Gaps, GapBytes uint64
	// Retransmitted counts segments whose bytes were all read already.
	Retransmitted uint64
	// Resyncs counts the times a direction found its frames again: once
	// per direction of a connection open before the capture began, and
	// after each loss of track. Desyncs counts the frames whose header was
	// not plausible where the reader expected one.
	Resyncs, Desyncs uint64
	// LearnedPorts counts the broker ports learned from responses.
	LearnedPorts int
}

// connKey names a connection by its client and broker endpoints.
type connKey struct{ client, broker endpoint }

// Source reads captures and hands out the exchanges in them, in the
// order they completed (pipeline.Source). It never reuses an exchange.
// Memory is bounded by the connections open at a time, not by the
// captures' length. Next is called from one goroutine; Stats from any.
type Source struct {
	cfg     Config
	m       *merger
	closers []io.Closer
	brokers *brokers
	conns   map[connKey]*conn
	// order holds the connections in the order they began, ended ones
	// until the next sweep leaves them out.
	order  []*conn
	nextID uint64

	out     []*decode.Exchange // handed out from outHead on
	outHead int
	lost    uint64 // not reported yet
	now     time.Time
	swept   time.Time
	shown   time.Time // when Stats was last brought up to date
	seg     segment
	ended   bool

	reassembly reassemblyStats
	stats      Stats
	published  atomic.Pointer[Stats]
}

// publishEvery is how often, by the capture's clock, Stats is brought up
// to date; sweepEvery how often connections are looked over for missing
// bytes waited for long enough (a connection that carries packets is
// looked at with each) and for idleness.
const (
	publishEvery = time.Second
	sweepEvery   = 10 * time.Second
)

// Open opens the captures at paths ("-" reads standard input) and returns
// a Source reading them, merged by time.
func Open(cfg Config, paths ...string) (*Source, error) {
	var names []string
	var rs []io.Reader
	var files []io.Closer
	for _, p := range paths {
		if p == "-" {
			names, rs = append(names, "standard input"), append(rs, os.Stdin)
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("capture: %w", err)
		}
		names, rs, files = append(names, p), append(rs, f), append(files, f)
	}
	s, err := NewSource(cfg, names, rs)
	if err != nil {
		closeAll(files)
		return nil, err
	}
	s.closers = files
	return s, nil
}

// NewSource returns a Source reading the captures rs, merged by time;
// names say which is which in errors.
func NewSource(cfg Config, names []string, rs []io.Reader) (*Source, error) {
	var prs []*packetReader
	for i, r := range rs {
		pr, err := openReader(names[i], r)
		if err != nil {
			return nil, err
		}
		prs = append(prs, pr)
	}
	return newSource(cfg, prs), nil
}

func newSource(cfg Config, rs []*packetReader) *Source {
	if len(cfg.BrokerPorts) == 0 {
		cfg.BrokerPorts = []uint16{DefaultBrokerPort}
	}
	if cfg.MaxFrameSize <= 0 {
		cfg.MaxFrameSize = int(proxy.DefaultMaxFrameSize)
	}
	if cfg.MaxObservedFrameSize <= 0 {
		cfg.MaxObservedFrameSize = int(proxy.DefaultMaxObservedFrameSize)
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 15 * time.Minute
	}
	s := &Source{cfg: cfg, m: newMerger(rs), brokers: newBrokers(cfg.BrokerPorts), conns: map[connKey]*conn{}}
	s.publish()
	return s
}

func closeAll(cs []io.Closer) {
	for _, c := range cs {
		c.Close()
	}
}

// Close closes the capture files Open opened.
func (s *Source) Close() error {
	closeAll(s.closers)
	return nil
}

// Next returns the next exchange and how many were lost since the previous
// call (pipeline.Source). At the end of the captures Next returns io.EOF;
// the requests still awaiting their responses are not told (Stats'
// Unfinished). A capture cut short
// (tcpdump killed mid-write) ends there; Err says so.
func (s *Source) Next() (*decode.Exchange, uint64, error) {
	for s.outHead == len(s.out) {
		if s.ended {
			lost := s.lost
			s.lost = 0
			return nil, lost, io.EOF
		}
		p, err := s.m.next()
		if errors.Is(err, io.EOF) {
			s.finish()
			continue
		}
		s.packet(p)
	}
	x := s.out[s.outHead]
	s.out[s.outHead] = nil
	s.outHead++
	if s.outHead == len(s.out) {
		s.out, s.outHead = s.out[:0], 0
	}
	lost := s.lost
	s.lost = 0
	return x, lost, nil
}

// Err is the first error met reading a capture other than its end: one cut
// mid-packet. Every packet before it was read.
func (s *Source) Err() error { return s.m.err }

// Stats returns the counts as of the last sweep (every second of capture
// time) or the end.
func (s *Source) Stats() Stats { return *s.published.Load() }

// publish makes the counts so far what Stats returns.
func (s *Source) publish() {
	st := s.stats
	st.Open = len(s.conns)
	st.Gaps, st.GapBytes = s.reassembly.gaps, s.reassembly.gapBytes
	st.Retransmitted = s.reassembly.retransmitted
	st.LearnedPorts = s.brokers.learned
	s.published.Store(&st)
}

// packet reads one packet.
func (s *Source) packet(p packet) {
	s.stats.Packets++
	s.stats.Bytes += uint64(len(p.data))
	s.now = p.ci.Timestamp
	defer s.sweep()
	seg := &s.seg
	if parseSegment(p.lt, p.data, seg) != nil {
		s.stats.Other++
		return
	}
	seg.at = p.ci.Timestamp
	var key connKey
	var fromClient bool
	switch {
	case s.brokers.has(seg.dst.port):
		key, fromClient = connKey{client: seg.src, broker: seg.dst}, true
	case s.brokers.has(seg.src.port):
		key = connKey{client: seg.dst, broker: seg.src}
	default:
		s.stats.Other++
		return
	}
	c := s.conns[key]
	if c != nil && fromClient && seg.flags&(tcpSYN|tcpACK) == tcpSYN && c.reqStream.started && seg.seq+1 != c.reqStream.next {
		// A new connection on the same ports: the old one ended unseen.
		s.endConn(key, c, false)
		c = nil
	}
	if c == nil {
		if seg.flags&tcpRST != 0 {
			return
		}
		s.nextID++
		s.stats.Connections++
		c = newConn(s, s.nextID, key.client, key.broker)
		s.conns[key] = c
		s.order = append(s.order, c)
	}
	c.segment(seg, fromClient)
	if seg.flags&tcpRST != 0 || c.closed() {
		s.endConn(key, c, true)
	}
}

// endConn ends c and forgets it; seen says the capture saw it close.
func (s *Source) endConn(key connKey, c *conn, seen bool) {
	c.end(seen)
	c.ended = true
	delete(s.conns, key)
}

// sweep, every sweepEvery of capture time, ends the connections idle for
// IdleTimeout and gives up on missing bytes waited for long enough, in
// the order the connections began, so that what they hand out is in the
// same order on every read; and every publishEvery, it publishes the
// counts.
func (s *Source) sweep() {
	if s.now.Sub(s.shown) >= publishEvery || s.stats.Packets%(1<<16) == 0 {
		s.shown = s.now
		s.publish()
	}
	if s.now.Sub(s.swept) < sweepEvery {
		return
	}
	s.swept = s.now
	open := s.order[:0]
	for _, c := range s.order {
		switch {
		case c.ended:
			continue
		case s.now.Sub(c.lastSeen) >= s.cfg.IdleTimeout:
			s.endConn(connKey{c.client, c.broker}, c, false)
			continue
		}
		c.expire(s.now)
		open = append(open, c)
	}
	clear(s.order[len(open):])
	s.order = open
}

// finish ends every connection at the end of the captures.
func (s *Source) finish() {
	for _, c := range s.order {
		if !c.ended {
			s.endConn(connKey{c.client, c.broker}, c, false)
		}
	}
	s.order = nil
	s.ended = true
	s.publish()
}

// emit hands out x after the exchanges before it.
func (s *Source) emit(x *decode.Exchange) {
	s.out = append(s.out, x)
	s.stats.Exchanges++
}

// lose counts n exchanges lost in a gap.
func (s *Source) lose(n uint64) {
	s.lost += n
	s.stats.Lost += n
}

// loseTrack counts a stretch of a connection whose frames are unknown.
func (s *Source) loseTrack() {
	s.stats.Untracked++
	s.lose(1)
}

// skipped counts the bytes of a skipped connection.
func (s *Source) skipped(c *conn, n int) {
	if c.skip == skipTLS {
		s.stats.TLSBytes += uint64(n)
	}
}
