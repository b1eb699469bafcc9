// Package testkafka is what the tests of several packages share to talk
// Kafka on loopback: an in-process kfake cluster closed when the test
// ends, one that records the address of every connection it accepts, the
// certificate files of a TLS listener, and waiting for a condition
// instead of sleeping. It imports testing, so only tests import it.
package testkafka

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// Start starts an in-process kfake cluster with opts (kfake listens on
// 127.0.0.1) and closes it when the test ends.
func Start(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Recording is a kfake cluster whose listeners record the remote address
// of every connection they accept, so that a test can tell a client that
// went around the proxy.
type Recording struct {
	*kfake.Cluster
	mu      sync.Mutex
	remotes []string
}

// Accepted returns the remote addresses of every connection accepted so
// far.
func (r *Recording) Accepted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.remotes...)
}

// StartRecording is Start with listeners that record what they accept;
// opts come after the listener option, so they may not replace it.
func StartRecording(t testing.TB, opts ...kfake.Opt) *Recording {
	t.Helper()
	r := &Recording{}
	opts = append([]kfake.Opt{kfake.ListenFn(func(network, addr string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		if err != nil {
			return nil, err
		}
		return recordingListener{ln, r}, nil
	})}, opts...)
	r.Cluster = Start(t, opts...)
	return r
}

type recordingListener struct {
	net.Listener
	r *Recording
}

func (l recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.r.mu.Lock()
		l.r.remotes = append(l.r.remotes, c.RemoteAddr().String())
		l.r.mu.Unlock()
	}
	return c, err
}

// CertFiles writes c's certificate and key into dir as name.crt and
// name.key, as a secret mount holds them, and returns their paths.
func CertFiles(t testing.TB, dir, name string, c testpki.Issued) (certFile, keyFile string) {
	t.Helper()
	return testpki.WriteFile(t, dir, name+".crt", c.CertPEM), testpki.WriteFile(t, dir, name+".key", c.KeyPEM)
}

// WaitFor polls cond every 10 ms until it holds, and fails the test
// naming what it waited for when timeout passes first. It is for
// asynchronous effects (a pipeline, a log line, a group settling), never
// for speed: the timeout is a bound for a stuck test, not a figure.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
