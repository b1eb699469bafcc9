package proxy

import (
	"crypto/tls"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// servedSerial dials addr with TLS and returns the serial number of the
// certificate it serves.
func servedSerial(t *testing.T, addr string, ca *testpki.CA) *big.Int {
	t.Helper()
	tc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool()})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer tc.Close()
	return tc.ConnectionState().PeerCertificates[0].SerialNumber
}

// TestTLSReloadOnFileChange: when the certificate files change, new
// connections get the new certificate while a connection already open
// keeps working; a change that does not load keeps the certificate in use
// and is logged.
func TestTLSReloadOnFileChange(t *testing.T) {
	cluster := startKfake(t, 1)
	ca := testpki.NewCA(t, "kproxy CA")
	dir := t.TempDir()
	first := ca.Issue(t, testpki.Spec{CN: "first", IPs: []string{"127.0.0.1"}})
	cfg := testConfig(cluster.ListenAddrs()...)
	cfg.TLS = listenerTLS(t, dir, first)
	cfg.TLS.ReloadInterval = 20 * time.Millisecond
	log, logs := observedLogger()
	p := startProxy(t, cfg, log)
	addr := p.Addr().String()

	old, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := apiVersionsRoundTrip(old, 1); err != nil {
		t.Fatalf("request on the first connection: %v", err)
	}
	if got := old.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(first.Serial) != 0 {
		t.Fatalf("served serial %v; want %v", got, first.Serial)
	}

	second := ca.Issue(t, testpki.Spec{CN: "second", IPs: []string{"127.0.0.1"}})
	listenerTLS(t, dir, second)
	waitFor(t, 5*time.Second, "new connections to get the new certificate", func() bool {
		return servedSerial(t, addr, ca).Cmp(second.Serial) == 0
	})
	if err := apiVersionsRoundTrip(old, 2); err != nil {
		t.Fatalf("request on the connection opened before the reload: %v", err)
	}
	if logs.FilterMessageSnippet("listener TLS certificate reloaded").Len() == 0 {
		t.Error("the reload was not logged")
	}

	testpki.WriteFile(t, dir, "server.key", []byte("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"))
	waitFor(t, 5*time.Second, "the failed reload logged", func() bool {
		return logs.FilterMessageSnippet("reload failed; keeping the previous one").Len() > 0
	})
	if got := servedSerial(t, addr, ca); got.Cmp(second.Serial) != 0 {
		t.Errorf("after a failed reload, served serial %v; want the previous one, %v", got, second.Serial)
	}
	if err := apiVersionsRoundTrip(old, 3); err != nil {
		t.Fatalf("request on the first connection after a failed reload: %v", err)
	}

	// Keys are read, never logged: not the good ones, not the broken one.
	secrets := []string{"bm90IGEga2V5"}
	for _, k := range [][]byte{first.KeyPEM, second.KeyPEM} {
		secrets = append(secrets, strings.Split(string(k), "\n")[1])
	}
	for _, e := range logs.All() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		for _, secret := range secrets {
			if strings.Contains(line, secret) {
				t.Errorf("log line %q holds key material", e.Message)
			}
		}
	}
}

// TestReloadTLS: ReloadTLS (what SIGHUP calls) loads changed files at
// once, and reports a failure while keeping the certificate in use.
func TestReloadTLS(t *testing.T) {
	ca := testpki.NewCA(t, "kproxy CA")
	dir := t.TempDir()
	first := ca.Issue(t, testpki.Spec{CN: "first", IPs: []string{"127.0.0.1"}})
	cfg := fakeConfig("127.0.0.1:1")
	cfg.TLS = listenerTLS(t, dir, first)
	cfg.TLS.ReloadInterval = time.Hour
	p := startProxy(t, cfg, nil)
	addr := p.Addr().String()

	second := ca.Issue(t, testpki.Spec{CN: "second", IPs: []string{"127.0.0.1"}})
	listenerTLS(t, dir, second)
	if got := servedSerial(t, addr, ca); got.Cmp(first.Serial) != 0 {
		t.Fatalf("before ReloadTLS, served serial %v; want %v", got, first.Serial)
	}
	if err := p.ReloadTLS(); err != nil {
		t.Fatalf("ReloadTLS: %v", err)
	}
	if got := servedSerial(t, addr, ca); got.Cmp(second.Serial) != 0 {
		t.Fatalf("after ReloadTLS, served serial %v; want %v", got, second.Serial)
	}

	// A certificate with another certificate's key.
	third := ca.Issue(t, testpki.Spec{CN: "third", IPs: []string{"127.0.0.1"}})
	testpki.WriteFile(t, dir, "server.crt", third.CertPEM)
	err := p.ReloadTLS()
	if err == nil {
		t.Fatal("ReloadTLS of a certificate with the wrong key succeeded")
	}
	t.Logf("ReloadTLS: %v", err)
	if got := servedSerial(t, addr, ca); got.Cmp(second.Serial) != 0 {
		t.Errorf("after a failed ReloadTLS, served serial %v; want %v", got, second.Serial)
	}
}
