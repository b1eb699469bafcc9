package proxy

import "net"

// resetOnClose makes the next Close of nc send a TCP reset rather than an
// orderly FIN. A client reads a reset as a broker that went away, which
// every Kafka client retries; an orderly close before the first response
// looks like a protocol problem (franz-go: ErrFirstReadEOF, not retried).
// A TLS connection (or any wrapper with NetConn) is reset underneath.
func resetOnClose(nc net.Conn) {
	if w, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = w.NetConn()
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}
