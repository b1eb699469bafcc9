package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"net"
	"time"

	"go.uber.org/zap"
)

// acceptTLS runs the server side of TLS on a new client connection of a
// TLS listener, and with SNI routing picks the broker node the client asked
// for. It replaces c.client with the TLS connection and reports whether
// the connection may go on; when it may not, it has logged why.
//
// Before the handshake it peeks at the first bytes: a client that sends a
// plaintext Kafka request to a TLS listener would otherwise see only a
// closed connection and the log a vague handshake error.
func (c *conn) acceptTLS(ctx context.Context) bool {
	raw := c.client
	raw.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	br := bufio.NewReaderSize(readerOf(raw), 16)
	first, err := br.Peek(4)
	if err != nil {
		c.log.Debug("client closed before its TLS handshake", zap.Error(err))
		return false
	}
	var prefix [4]byte
	copy(prefix[:], first)
	if !isTLSHello(prefix) {
		c.p.stats.plaintextOnTLS.Add(1)
		if size := int32(binary.BigEndian.Uint32(prefix[:])); size > 0 && size <= c.p.cfg.MaxFrameSize {
			c.p.rate.warn(c.log, "plaintext_on_tls", "plaintext Kafka request on a TLS listener: kproxy listeners speak TLS; configure the "+
				"client with TLS (security.protocol=SSL or SASL_SSL) and kproxy's CA; closing",
				zap.Int32("frame_size", size))
		} else {
			c.p.rate.warn(c.log, "not_tls", "a TLS listener received bytes that are neither TLS nor Kafka; closing",
				zap.String("prefix", describePrefix(prefix)))
		}
		return false
	}
	tc := tls.Server(&peekedConn{Conn: rawConn(raw), r: br}, c.p.tls.certs.config())
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		if ctx.Err() != nil || c.isStopping() {
			c.log.Debug("shutting down: TLS handshake abandoned", zap.Error(err))
			return false
		}
		c.p.stats.tlsHandshakeFailures.Add(1)
		// Logged at most once a second, as any client can fail as often as
		// it connects.
		c.p.rate.warn(c.log, "tls_handshake", "TLS handshake with the client failed; closing", zap.Error(err))
		return false
	}
	raw.SetDeadline(time.Time{})
	if !c.setClient(tc) {
		return false
	}
	state := tc.ConnectionState()
	if len(state.PeerCertificates) > 0 {
		c.clientCert = state.PeerCertificates[0].Subject.String()
	}
	if c.p.tls.sni != nil && c.brokerID < 0 {
		if id, ok := c.p.tls.sni.nodeOf(state.ServerName); ok {
			c.brokerID = id
			c.log = c.log.With(zap.Int32("sni_broker_id", id))
		}
	}
	if ce := c.log.Check(zap.DebugLevel, "TLS handshake done"); ce != nil {
		fields := []zap.Field{zap.String("server_name", state.ServerName), zap.String("tls_version", tls.VersionName(state.Version))}
		if c.clientCert != "" {
			fields = append(fields, zap.String("client_subject", c.clientCert))
		}
		ce.Write(fields...)
	}
	return true
}

// setClient replaces the client socket once TLS is up; false when the
// connection was closed meanwhile (shutdown timeout).
func (c *conn) setClient(nc net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		nc.Close()
		return false
	}
	c.client = nc
	return true
}

// peekedConn is a connection some of whose first bytes were read into r
// to be looked at: reads go through r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }
