package proxy

import (
	"net"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestNodeListenerOpenedBeforeRunIsServed: a node listener opened before
// Run (a response or CheckListeners naming the node) waits for Run, which
// starts its accept loop with its context.
func TestNodeListenerOpenedBeforeRunIsServed(t *testing.T) {
	p := newProxy(t, fakeConfig("127.0.0.1:1"), zap.NewNop())
	host, port, ok := p.route(3, "127.0.0.1:1")
	if !ok {
		t.Fatal("route refused node 3")
	}
	stop := runUntil(t, p)
	defer stop()
	c, err := net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, 10*time.Second, "the node listener's connection to be served", func() bool {
		return p.Stats().ConnectionsTotal == 1
	})
}

// TestShutdownReleasesPendingAccepts: a node listener whose accept loop
// Run never started is closed by shutdown, which does not wait for it.
func TestShutdownReleasesPendingAccepts(t *testing.T) {
	p := newProxy(t, fakeConfig("127.0.0.1:1"), zap.NewNop())
	host, port, ok := p.route(3, "127.0.0.1:1")
	if !ok {
		t.Fatal("route refused node 3")
	}
	done := make(chan struct{})
	go func() {
		p.shutdown()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown waits for an accept loop that never started")
	}
	if c, err := net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(int(port)))); err == nil {
		c.Close()
		t.Error("the node listener is still open after shutdown")
	}
}
