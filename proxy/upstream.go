package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
)

// dialBroker connects to the broker at addr: over TCP (p.dial), then, with
// UpstreamTLS, through a TLS handshake that verifies the host of addr (the
// name the broker advertises in Metadata, or the seed's name for a
// bootstrap connection) unless UpstreamTLS.ServerName overrides it. The
// connection it returns is ready for Kafka requests; an authentication
// step, when there is one, comes after it.
func (p *Proxy) dialBroker(ctx context.Context, addr string) (net.Conn, error) {
	nc, err := p.dial(ctx, addr)
	if err != nil || p.tls.upstream == nil {
		return nc, err
	}
	cfg := p.tls.upstream.config().Clone()
	if cfg.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		cfg.ServerName = host
	}
	tc := tls.Client(rawConn(nc), cfg)
	hctx, cancel := context.WithTimeout(ctx, min(p.cfg.DialTimeout, tlsHandshakeTimeout))
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("proxy: TLS handshake with broker %s (verifying the name %q): %w%s",
			addr, cfg.ServerName, err, upstreamTLSHint(err))
	}
	return tc, nil
}

// upstreamTLSHint says which setting to look at for the usual
// verification failures.
func upstreamTLSHint(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	switch {
	case errors.As(err, &unknown):
		return " (the broker's certificate is not signed by a CA of upstream-ca, or of the system roots when it is not set)"
	case errors.As(err, &host):
		return " (the broker's certificate does not name the host it advertises; fix the certificate, or set upstream-server-name to a name it holds)"
	}
	return ""
}
