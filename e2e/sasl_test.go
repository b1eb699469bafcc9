//go:build e2e

package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The broker's SASL_SSL listeners (broker.sh): saslSSLAddr without
// re-authentication, reauthAddr whose sessions last E2E_REAUTH_MS (3 s), so
// that clients re-authenticate on their live connections (KIP-368).
var (
	saslSSLAddr = "127.0.0.1:" + envOr("E2E_SASL_SSL_PORT", "61094")
	reauthAddr  = "127.0.0.1:" + envOr("E2E_REAUTH_PORT", "61095")
	// saslAdmin is kproxy's admin server in the SASL scenarios, whose
	// pages the password grep reads too.
	saslAdmin = envOr("E2E_SASL_ADMIN", "127.0.0.1:61190")
	// brokerTLSDir holds the broker's CA (ca.pem) and the users'
	// passwords, made fresh by each broker.sh start.
	brokerTLSDir = filepath.Join(brokerDir, "tls")
)

// brokerPasswords reads the passwords broker.sh made for this start, by
// user: alice (SCRAM-SHA-256), bob (PLAIN), kproxy (both).
func brokerPasswords(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(brokerTLSDir, "passwords"))
	if err != nil {
		t.Fatalf("the broker's SASL users (broker.sh start writes them): %v", err)
	}
	pw := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if u, p, ok := strings.Cut(line, "="); ok {
			pw[u] = p
		}
	}
	for _, u := range []string{"alice", "bob", "kproxy"} {
		if len(pw[u]) < 16 {
			t.Fatalf("no password for %s in %s", u, filepath.Join(brokerTLSDir, "passwords"))
		}
	}
	return pw
}

// proxyTLS is kproxy's own listener certificate for one scenario, signed by
// a CA made for it: clients trust CA instead of the cluster's.
type proxyTLS struct {
	CA, Cert, Key string // PEM files
}

// makeProxyTLS writes a CA and a certificate for 127.0.0.1 and localhost
// into the scenario's run directory.
func makeProxyTLS(t *testing.T) proxyTLS {
	t.Helper()
	return makeProxyTLSFor(t, "localhost")
}

// makeProxyTLSFor is makeProxyTLS with a certificate for 127.0.0.1 and the
// DNS names given (a wildcard for SNI routing).
func makeProxyTLSFor(t *testing.T, dnsNames ...string) proxyTLS {
	t.Helper()
	dir := filepath.Join(runDir(t), "kproxy-tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kproxy e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsNames[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour),
		DNSNames: dnsNames, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := proxyTLS{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem")}
	writePEM(t, p.CA, "CERTIFICATE", caDER)
	writePEM(t, p.Cert, "CERTIFICATE", der)
	writePEM(t, p.Key, "PRIVATE KEY", keyDER)
	return p
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsBothSides are kproxy's flags for TLS on its listeners (with p) and to
// the broker's SASL_SSL listeners (trusting the cluster's CA).
func tlsBothSides(p proxyTLS) []string {
	return []string{"--tls-cert", p.Cert, "--tls-key", p.Key,
		"--upstream-tls", "--upstream-ca", filepath.Join(brokerTLSDir, "ca.pem"),
		"--admin", saslAdmin}
}

// clientSecurity is the environment the e2e clients read their TLS and
// SASL settings from (Client.java security, events.py security_*):
// protocol SSL or SASL_SSL, trusting ca; no SASL when mechanism is "".
func clientSecurity(protocol, ca, mechanism, user, password string) []string {
	env := []string{"E2E_SECURITY_PROTOCOL=" + protocol, "E2E_SSL_CA=" + ca}
	if mechanism != "" {
		env = append(env, "E2E_SASL_MECHANISM="+mechanism, "E2E_SASL_USERNAME="+user, "E2E_SASL_PASSWORD="+password)
	}
	return env
}

// saveAdminPages fetches what kproxy's admin server serves, into the run
// directory (admin-*.txt), for the password grep.
func saveAdminPages(t *testing.T) {
	t.Helper()
	for _, page := range []string{"metrics", "healthz", "timeline", "api/timeline"} {
		resp, err := http.Get("http://" + saslAdmin + "/" + page)
		if err != nil {
			t.Errorf("admin /%s: %v", page, err)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("admin /%s: status %d, %v", page, resp.StatusCode, err)
		}
		name := "admin-" + strings.ReplaceAll(page, "/", "-") + ".txt"
		if err := os.WriteFile(filepath.Join(runDir(t), name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// kproxyOutputs are the files of a run directory kproxy wrote or served:
// its log, its journal, the live and replayed reports, the admin pages.
func kproxyOutputs(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(runDir(t), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(runDir(t), path)
		switch {
		case strings.HasPrefix(rel, "kproxy."), strings.HasPrefix(rel, "journal"+string(filepath.Separator)),
			strings.HasPrefix(rel, "admin-"), rel == "live-report.json", rel == "timeline.json":
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkNoSecrets greps everything kproxy wrote or served for each secret,
// and fails on any hit. So that a grep of the wrong files cannot pass, it
// also requires every name in mustFind (a group, a topic) to be found, in
// the journal and the report among others.
func checkNoSecrets(t *testing.T, secrets []string, mustFind ...string) {
	t.Helper()
	files := kproxyOutputs(t)
	found := map[string]bool{}
	var journaled, reported bool
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds a password", f)
			}
		}
		for _, m := range mustFind {
			if bytes.Contains(b, []byte(m)) {
				found[m] = true
				journaled = journaled || strings.Contains(f, string(filepath.Separator)+"journal"+string(filepath.Separator))
				reported = reported || strings.HasSuffix(f, "live-report.json")
			}
		}
	}
	for _, m := range mustFind {
		if !found[m] {
			t.Errorf("the grep found %q in none of kproxy's %d files: it is not reading what kproxy wrote", m, len(files))
		}
	}
	if mode == "" && (!journaled || !reported) {
		t.Errorf("the grep found the group neither in the journal (%v) nor in the report (%v)", journaled, reported)
	}
	t.Logf("password grep: %d passwords, none in %d files kproxy wrote or served", len(secrets), len(files))
}
