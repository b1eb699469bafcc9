package proxy

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"go.uber.org/zap"
)

// heldBroker answers each request only when told to: it reports every
// request it reads on got and writes a response for each value sent on
// release.
type heldBroker struct {
	ln      net.Listener
	got     chan int32
	release chan struct{}
}

func startHeldBroker(t *testing.T) *heldBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &heldBroker{ln: ln, got: make(chan int32, 16), release: make(chan struct{}, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for {
			frame, err := readTestFrame(c)
			if err != nil {
				return
			}
			corr := int32(binary.BigEndian.Uint32(frame[8:]))
			b.got <- corr
			if _, ok := <-b.release; !ok {
				return
			}
			resp := binary.BigEndian.AppendUint32(nil, 4)
			resp = binary.BigEndian.AppendUint32(resp, uint32(corr))
			if _, err := c.Write(resp); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		close(b.release)
		<-done
	})
	return b
}

// runUntil runs p in the background and returns a function that cancels
// it and waits for Run to return.
func runUntil(t *testing.T, p *Proxy) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestShutdownLetsInFlightFinish: a request forwarded before shutdown gets
// its response; the connection is then closed and no new ones accepted.
func TestShutdownLetsInFlightFinish(t *testing.T) {
	b := startHeldBroker(t)
	cfg := fakeConfig(b.ln.Addr().String())
	cfg.ShutdownTimeout = 20 * time.Second
	p := newProxy(t, cfg, zap.NewNop())
	stop := runUntil(t, p)

	c := dial(t, p.Addr().String())
	if _, err := c.Write(testRequest(rand.New(rand.NewPCG(1, 1)), 1, 5, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	<-b.got
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	waitFor(t, 10*time.Second, "the listener to close", func() bool {
		nc, err := net.Dial("tcp", p.Addr().String())
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	b.release <- struct{}{}
	resp, err := readTestFrame(c)
	if err != nil {
		t.Fatalf("in-flight response after shutdown began: %v", err)
	}
	if corr := int32(binary.BigEndian.Uint32(resp[4:])); corr != 5 {
		t.Fatalf("corr %d; want 5", corr)
	}
	expectClosed(t, c)
	<-stopped
}

// TestShutdownTimeout: a response that never comes does not hold Run past
// ShutdownTimeout; the client connection is closed.
func TestShutdownTimeout(t *testing.T) {
	b := startHeldBroker(t)
	cfg := fakeConfig(b.ln.Addr().String())
	cfg.ShutdownTimeout = 100 * time.Millisecond
	log, logs := observedLogger()
	p := newProxy(t, cfg, log)
	stop := runUntil(t, p)
	c := dial(t, p.Addr().String())
	if _, err := c.Write(testRequest(rand.New(rand.NewPCG(1, 1)), 1, 5, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	<-b.got
	stop()
	expectClosed(t, c)
	if logs.FilterMessageSnippet("shutdown timeout").Len() != 1 {
		t.Errorf("no shutdown-timeout log line; got %v", logs.All())
	}
}
