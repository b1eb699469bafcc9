package proxy

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// NodeIDPlaceholder is what SNIHostPattern writes where a broker's node id
// goes.
const NodeIDPlaceholder = "$(nodeId)"

// sniPattern names broker nodes by host name on the bootstrap port:
// "broker-$(nodeId).kproxy.example.com" gives node 2 the name
// broker-2.kproxy.example.com. Clients ask for that name in their TLS
// ClientHello (SNI), and kproxy routes the connection to node 2.
type sniPattern struct {
	prefix, suffix string // lower case
}

// parseSNIPattern checks that pattern holds the placeholder once.
func parseSNIPattern(pattern string) (*sniPattern, error) {
	if strings.Count(pattern, NodeIDPlaceholder) != 1 {
		return nil, fmt.Errorf("want %s exactly once", NodeIDPlaceholder)
	}
	if strings.ContainsAny(pattern, ":/ ") {
		return nil, errors.New("want a host name, without port")
	}
	prefix, suffix, _ := strings.Cut(strings.ToLower(pattern), strings.ToLower(NodeIDPlaceholder))
	return &sniPattern{prefix: prefix, suffix: suffix}, nil
}

// host is the name of a node.
func (s *sniPattern) host(nodeID int32) string {
	return s.prefix + strconv.Itoa(int(nodeID)) + s.suffix
}

// nodeOf returns the node a server name asks for; ok is false for any
// other name (the bootstrap name, or none), which goes to a seed broker.
func (s *sniPattern) nodeOf(serverName string) (int32, bool) {
	name := strings.ToLower(strings.TrimSuffix(serverName, "."))
	if len(name) <= len(s.prefix)+len(s.suffix) || !strings.HasPrefix(name, s.prefix) || !strings.HasSuffix(name, s.suffix) {
		return 0, false
	}
	digits := name[len(s.prefix) : len(name)-len(s.suffix)]
	id, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || id < 0 || strconv.FormatInt(id, 10) != digits {
		return 0, false
	}
	return int32(id), true
}

// covered checks that a certificate is valid for the names of nodes 0, 1
// and the largest id: a wildcard such as *.kproxy.example.com covers them
// all.
func (s *sniPattern) covered(leaf *x509.Certificate) error {
	for _, id := range []int32{0, 1, 1<<31 - 1} {
		if err := leaf.VerifyHostname(s.host(id)); err != nil {
			return fmt.Errorf("does not cover the sni-host-pattern names (want a wildcard such as *%s): %w",
				s.suffix, err)
		}
	}
	return nil
}

// CheckSNIHostPattern checks an SNIHostPattern, and when cert is not nil
// that the certificate covers the names it gives. New makes the same
// checks; config uses it to name the setting at fault before New runs.
func CheckSNIHostPattern(pattern string, cert *x509.Certificate) error {
	s, err := parseSNIPattern(pattern)
	if err != nil || cert == nil {
		return err
	}
	return s.covered(cert)
}
