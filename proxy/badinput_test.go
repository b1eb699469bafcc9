package proxy

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// expectClosed fails unless the proxy closes c without sending anything.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err == nil {
		t.Fatalf("read %d bytes, error %v; want the connection closed", n, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection still open; want it closed by kproxy")
	}
}

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMalformedGroupFrame: a Heartbeat whose body is garbage reaches the
// broker untouched, its response reaches the client, and the decode
// failure is counted and logged once per api and version.
func TestMalformedGroupFrame(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	log, logs := observedLogger()
	rec := &recorder{}
	p := newProxy(t, fakeConfig(broker.addr()), log)
	pl := runProxy(t, p, rec)
	c := dial(t, p.Addr().String())
	rng := rand.New(rand.NewPCG(1, 2))
	for corr := range int32(3) {
		if _, err := c.Write(testRequest(rng, 12, corr, 64, 0, 100)); err != nil {
			t.Fatal(err)
		}
		if _, err := readTestFrame(c); err != nil {
			t.Fatalf("response %d: %v", corr, err)
		}
	}
	waitFor(t, 10*time.Second, "three malformed exchanges counted", func() bool { return pl.Stats().Undecoded == 3 })
	if n := logs.FilterMessageSnippet("did not decode").Len(); n != 1 {
		t.Errorf("%d decode-failure log lines; want 1 (once per api and version)", n)
	}
	if xs, _ := rec.snapshot(); len(xs) != 3 || xs[0].Response == nil {
		t.Errorf("observer saw %d exchanges; want 3 with responses", len(xs))
	}
}

// TestOversizedFrame: a frame above MaxFrameSize closes its connection
// before anything is read or allocated; another connection goes on.
func TestOversizedFrame(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	log, logs := observedLogger()
	cfg := fakeConfig(broker.addr())
	cfg.MaxFrameSize = 1 << 20
	p := startProxy(t, cfg, log)

	good := dial(t, p.Addr().String())
	if err := roundTrip(t, good, 1, 10); err != nil {
		t.Fatal(err)
	}
	bad := dial(t, p.Addr().String())
	if err := roundTrip(t, bad, 1, 10); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], 1<<20+1)
	if _, err := bad.Write(size[:]); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, bad)
	if err := roundTrip(t, good, 2, 10); err != nil {
		t.Fatalf("other connection after the oversized frame: %v", err)
	}
	if got := p.Stats().OversizedFrames; got != 1 {
		t.Errorf("oversized frames %d; want 1", got)
	}
	if logs.FilterMessageSnippet("larger than the maximum frame size").Len() != 1 {
		t.Errorf("no oversized-frame log line; got %v", logs.All())
	}
}

// TestTLSClientHello: a TLS client on the plaintext listener is told so in
// the log, and no broker connection is made for it: kproxy never dials, and
// the broker accepts nothing.
func TestTLSClientHello(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	log, logs := observedLogger()
	p := newProxy(t, fakeConfig(broker.addr()), log)
	var dials atomic.Int64
	realDial := p.dial
	p.dial = func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		return realDial(ctx, addr)
	}
	runProxy(t, p)
	c := dial(t, p.Addr().String())
	tc := tls.Client(c, &tls.Config{ServerName: "kafka", InsecureSkipVerify: true})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err == nil {
		t.Fatal("TLS handshake succeeded against a plaintext listener")
	}
	waitFor(t, 5*time.Second, "the TLS log line", func() bool { return logs.FilterMessageSnippet("TLS ClientHello").Len() == 1 })
	// The connection is over once it is no longer open: any dial for it
	// would have happened by then.
	waitFor(t, 5*time.Second, "the connection to end", func() bool { return p.Stats().ConnectionsOpen == 0 })
	if st := p.Stats(); st.TLSHellos != 1 || st.OversizedFrames != 0 || st.ConnectionsTotal != 1 {
		t.Errorf("stats %+v: want 1 connection, 1 TLS hello, no oversized frame", st)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("kproxy dialed the broker %d times for a TLS client; want 0", n)
	}
	if n := broker.accepted.Load(); n != 0 {
		t.Errorf("the broker accepted %d connections; want 0", n)
	}
}

// TestUpstreamUnreachable: with the broker down, a client connection is
// closed with a clear log (at most once a second) and the proxy keeps
// accepting.
func TestUpstreamUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	log, logs := observedLogger()
	p := startProxy(t, fakeConfig(dead), log)
	for i := range 2 {
		c := dial(t, p.Addr().String())
		if err := roundTrip(t, c, int32(i), 10); err == nil {
			t.Fatal("round trip succeeded with the broker down")
		}
		expectClosed(t, c)
	}
	if got := p.Stats().UpstreamDialFailures; got != 2 {
		t.Errorf("dial failures %d; want 2", got)
	}
	// Rate-limited: the second failure, within a second, is only counted.
	if n := logs.FilterMessageSnippet("cannot reach the broker").Len(); n != 1 {
		t.Errorf("%d unreachable-broker log lines; want 1", n)
	}
}

// TestUpstreamDropAndReturn: a broker dropping one connection closes only
// that client connection; while the broker is down new connections are
// closed; once it is back they work.
func TestUpstreamDropAndReturn(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	addr := broker.addr()
	log, logs := observedLogger()
	p := startProxy(t, fakeConfig(addr), log)

	keep := dial(t, p.Addr().String())
	if err := roundTrip(t, keep, 1, 10); err != nil {
		t.Fatal(err)
	}
	dropped := dial(t, p.Addr().String())
	rng := rand.New(rand.NewPCG(3, 4))
	if _, err := dropped.Write(testRequest(rng, 1, 1, dropConn, 0, 0)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, dropped)
	if logs.FilterMessageSnippet("broker closed the connection").Len() != 1 {
		t.Errorf("no broker-closed log line; got %v", logs.All())
	}
	if err := roundTrip(t, keep, 2, 10); err != nil {
		t.Fatalf("other connection after the drop: %v", err)
	}

	broker.stop()
	expectClosed(t, keep)
	failures := p.Stats().UpstreamDialFailures
	down := dial(t, p.Addr().String())
	if err := roundTrip(t, down, 1, 10); err == nil {
		t.Fatal("round trip succeeded with the broker down")
	}
	expectClosed(t, down)
	if got := p.Stats().UpstreamDialFailures; got != failures+1 {
		t.Errorf("dial failures %d; want %d: the connection made while the broker was down failed to dial it", got, failures+1)
	}

	startFakeBroker(t, addr)
	back := dial(t, p.Addr().String())
	if err := roundTrip(t, back, 1, 10); err != nil {
		t.Fatalf("round trip once the broker is back: %v", err)
	}
}
