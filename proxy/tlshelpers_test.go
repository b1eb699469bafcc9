package proxy

import (
	"testing"

	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// listenerTLS writes a server certificate into dir and returns the
// listener TLS settings that use it.
func listenerTLS(t testing.TB, dir string, c testpki.Issued) *ListenerTLS {
	t.Helper()
	return &ListenerTLS{
		CertFile: testpki.WriteFile(t, dir, "server.crt", c.CertPEM),
		KeyFile:  testpki.WriteFile(t, dir, "server.key", c.KeyPEM),
	}
}
