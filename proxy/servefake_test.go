package proxy

import (
	"net"
	"sync"
	"testing"
)

// serveFake listens on 127.0.0.1 and serves each connection it accepts
// with serve, on a goroutine of its own, until the test ends: it then
// closes the listener and every connection, and waits for the serve calls
// to return. The fake SASL brokers (OAUTHBEARER, KIP-368 expiry,
// SaslHandshake v0) and the attack tests' sink run on it.
func serveFake(t testing.TB, serve func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.Map
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by the cleanup
			}
			conns.Store(c, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	return ln
}
