package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// dialOpts are the client options of -tls-ca and -resolve: TLS to the
// brokers trusting the CA in caFile, and a resolver override.
//
// resolve is "NAME=IP" or "*.DOMAIN=IP": a broker whose host is NAME, or
// ends in .DOMAIN, is dialed at IP (same port), as a hosts entry would do,
// while TLS still asks for and verifies the name (SNI routing needs the
// name in the handshake). Other hosts resolve as usual. "" for both means
// plaintext and the system resolver.
func dialOpts(caFile, resolve string) ([]kgo.Opt, error) {
	if caFile == "" && resolve == "" {
		return nil, nil
	}
	var pool *x509.CertPool
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("tls-ca: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls-ca %s: no PEM certificate in it", caFile)
		}
	}
	match, ip, err := parseResolve(resolve)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		target := addr
		if match(host) {
			target = net.JoinHostPort(ip, port)
		}
		if pool == nil {
			return d.DialContext(ctx, network, target)
		}
		td := &tls.Dialer{NetDialer: d, Config: &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}}
		return td.DialContext(ctx, network, target)
	}
	// kgo takes either Dialer or DialTLSConfig; the dialer does TLS
	// itself.
	return []kgo.Opt{kgo.Dialer(dial)}, nil
}

// parseResolve parses -resolve; match reports whether a host is
// overridden.
func parseResolve(resolve string) (match func(host string) bool, ip string, err error) {
	if resolve == "" {
		return func(string) bool { return false }, "", nil
	}
	name, ip, ok := strings.Cut(resolve, "=")
	if !ok || name == "" || net.ParseIP(ip) == nil {
		return nil, "", errors.New("resolve: want NAME=IP or *.DOMAIN=IP")
	}
	name = strings.ToLower(name)
	if strings.HasPrefix(name, "*.") {
		suffix := name[1:]
		return func(host string) bool { return strings.HasSuffix(strings.ToLower(host), suffix) }, ip, nil
	}
	return func(host string) bool { return strings.ToLower(host) == name }, ip, nil
}
