package proxy

import (
	"errors"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"
)

// dialIP connects to addr from the loopback address ip.
func dialIP(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialRefused fails unless a connection from ip to addr is reset at once,
// as a refused connection is; the reset may even reach the dial.
func dialRefused(t *testing.T, ip, addr string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if errors.Is(err, syscall.ECONNRESET) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	expectRefused(t, c)
}

// expectRefused fails unless c is reset at once, as a refused connection is.
func expectRefused(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read: %v; want the connection reset (refused)", err)
	}
}

// TestConnectionLimits: past MaxConnections, or MaxConnectionsPerIP from
// one address, a connection is reset at once and counted; the others are
// served, and a closed connection makes room again.
func TestConnectionLimits(t *testing.T) {
	tests := []struct {
		name          string
		max, perIP    int
		ips           []string // one connection from each, in order
		refused       int      // index in ips of the connection refused
		refusedCount  func(Stats) uint64
		otherRefusals func(Stats) uint64
	}{
		{"max_connections", 3, 0, []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"}, 3,
			func(s Stats) uint64 { return s.ConnectionsRefused }, func(s Stats) uint64 { return s.ConnectionsRefusedPerIP }},
		{"max_connections_per_ip", 10, 2, []string{"127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.1"}, 3,
			func(s Stats) uint64 { return s.ConnectionsRefusedPerIP }, func(s Stats) uint64 { return s.ConnectionsRefused }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			broker := startFakeBroker(t, "127.0.0.1:0")
			cfg := fakeConfig(broker.addr())
			cfg.MaxConnections, cfg.MaxConnectionsPerIP = tt.max, tt.perIP
			p := startProxy(t, cfg, nil)
			var served []net.Conn
			for i, ip := range tt.ips {
				if i == tt.refused {
					dialRefused(t, ip, p.Addr().String())
					continue
				}
				c := dialIP(t, ip, p.Addr().String())
				if err := roundTrip(t, c, int32(i), 10); err != nil {
					t.Fatalf("connection %d from %s: %v", i, ip, err)
				}
				served = append(served, c)
			}
			st := p.Stats()
			if tt.refusedCount(st) != 1 || tt.otherRefusals(st) != 0 {
				t.Errorf("refused %d, by the other limit %d; want 1 and 0", tt.refusedCount(st), tt.otherRefusals(st))
			}
			// Room again once one closes.
			served[0].Close()
			open := int64(len(served) - 1)
			waitFor(t, 5*time.Second, "the closed connection to end", func() bool { return p.Stats().ConnectionsOpen == open })
			c := dialIP(t, tt.ips[tt.refused], p.Addr().String())
			if err := roundTrip(t, c, 99, 10); err != nil {
				t.Fatalf("after a connection closed: %v", err)
			}
		})
	}
}

// TestIdleTimeout: a connection that moves no bytes is closed after the idle
// timeout and counted; one that keeps sending requests is not, and neither
// is one waiting for a response.
func TestIdleTimeout(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	cfg := fakeConfig(broker.addr())
	cfg.IdleTimeout = 800 * time.Millisecond
	p := startProxy(t, cfg, nil)

	idle := dial(t, p.Addr().String())
	busy := dial(t, p.Addr().String())
	silentAfterOne := dial(t, p.Addr().String())
	if err := roundTrip(t, silentAfterOne, 0, 10); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 16 {
		if err := roundTrip(t, busy, int32(i), 10); err != nil {
			t.Fatalf("busy connection, request %d after %v: %v", i, time.Since(start), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	expectClosed(t, idle)
	expectClosed(t, silentAfterOne)
	if err := roundTrip(t, busy, 100, 10); err != nil {
		t.Fatalf("busy connection after %v: %v", time.Since(start), err)
	}
	waitFor(t, 5*time.Second, "two idle closes", func() bool { return p.Stats().IdleCloses == 2 })
}

// TestIdleTimeoutSparesRequestsInFlight: a request whose response takes
// longer than the idle timeout (a JoinGroup waiting for a rebalance) does
// not make its connection idle.
func TestIdleTimeoutSparesRequestsInFlight(t *testing.T) {
	// An upstream that answers after a second.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		frame, err := readTestFrame(c)
		if err != nil {
			return
		}
		time.Sleep(time.Second)
		// A response: size, the request's correlation id, 4 bytes.
		resp := []byte{0, 0, 0, 8, frame[8], frame[9], frame[10], frame[11], 1, 2, 3, 4}
		c.Write(resp)
		readTestFrame(c) // until kproxy closes
	}()
	cfg := fakeConfig(ln.Addr().String())
	cfg.IdleTimeout = 300 * time.Millisecond
	p := startProxy(t, cfg, nil)
	c := dial(t, p.Addr().String())
	if _, err := c.Write(testRequest(rand.New(rand.NewPCG(1, 2)), 11, 7, 4, 0, 0)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := readTestFrame(c); err != nil {
		t.Fatalf("response after a second in flight: %v", err)
	}
	if n := p.Stats().IdleCloses; n != 0 {
		t.Errorf("idle closes %d; want 0", n)
	}
}
