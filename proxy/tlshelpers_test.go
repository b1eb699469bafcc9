package proxy

import (
	"testing"

	"github.com/kproxy-dev/kproxy/internal/testkafka"
	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// listenerTLS writes a server certificate into dir and returns the
// listener TLS settings that use it.
func listenerTLS(t testing.TB, dir string, c testpki.Issued) *ListenerTLS {
	t.Helper()
	cert, key := testkafka.CertFiles(t, dir, "server", c)
	return &ListenerTLS{CertFile: cert, KeyFile: key}
}
