//go:build linux

package proxy

import (
	"context"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"
)

// blackhole returns the address of a listener whose accept queue is full:
// on Linux a SYN to it is dropped, so a dial to it hangs until its timeout,
// like a dial to a broker behind a firewall that drops packets. (A listener
// that merely never accepts still completes handshakes into its queue.)
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	// listen(2) again on a listening socket changes its backlog. With 0,
	// Linux queues one connection, which the filler takes.
	var lerr error
	if err := raw.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), 0) }); err != nil || lerr != nil {
		t.Fatalf("shrinking the backlog: %v %v", err, lerr)
	}
	dial(t, ln.Addr().String()) // the filler, closed when the test ends
	probe, err := net.DialTimeout("tcp", ln.Addr().String(), 300*time.Millisecond)
	if err == nil {
		probe.Close()
		t.Skip("the kernel completed a handshake past a full accept queue; cannot blackhole here")
	}
	return ln.Addr().String()
}

// TestShutdownAbandonsDials: Run returns promptly even when a dial to the
// broker is under way and would take DialTimeout (ten minutes here) to fail:
// a client connection's dial, and broker discovery's.
func TestShutdownAbandonsDials(t *testing.T) {
	for _, tc := range []struct {
		name     string
		discover bool // else a client connection dials
	}{
		{"client connection", false},
		{"broker discovery", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeConfig(blackhole(t))
			cfg.DisableBrokerDiscovery = !tc.discover
			cfg.DialTimeout = 10 * time.Minute
			cfg.ShutdownTimeout = 100 * time.Millisecond
			log, logs := observedLogger()
			p := newProxy(t, cfg, log)
			dialing := make(chan struct{}, 4)
			real := p.dial
			p.dial = func(ctx context.Context, addr string) (net.Conn, error) {
				dialing <- struct{}{}
				return real(ctx, addr)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			defer cancel()

			var c net.Conn
			if !tc.discover {
				c = dial(t, p.Addr().String())
				if _, err := c.Write(testRequest(rand.New(rand.NewPCG(1, 1)), 1, 1, 0, 0, 0)); err != nil {
					t.Fatal(err)
				}
			}
			<-dialing
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Run waited for a dial to the broker past shutdown (DialTimeout is 10 minutes)")
			}
			if c != nil {
				expectClosed(t, c)
			}
			if st := p.Stats(); st.UpstreamDialFailures != 0 {
				t.Errorf("%d dial failures counted; a dial abandoned for shutdown is not one", st.UpstreamDialFailures)
			}
			for _, bad := range []string{"cannot reach the broker", "broker discovery failed"} {
				if n := logs.FilterMessageSnippet(bad).Len(); n != 0 {
					t.Errorf("%d %q log lines; shutdown is not a broker failure", n, bad)
				}
			}
		})
	}
}
