package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/internal/testkafka"
	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// certFiles writes a certificate for dns, valid from 2020 until
// notAfter, and its key into dir as name.crt and name.key.
func certFiles(t *testing.T, dir, name string, notAfter time.Time, dns ...string) (certFile, keyFile string) {
	t.Helper()
	c := testpki.NewCA(t, "config test CA").Issue(t, testpki.Spec{CN: name, DNS: dns,
		NotBefore: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: notAfter})
	return testkafka.CertFiles(t, dir, name, c)
}

// TestValidateTLS: the TLS settings of both sides, each failure naming
// its key. {dir} in a wanted message stands for the test's directory.
func TestValidateTLS(t *testing.T) {
	dir := t.TempDir()
	later := time.Now().Add(30 * 24 * time.Hour)
	cert, key := certFiles(t, dir, "server", later, "*.kproxy.test")
	otherCert, otherKey := certFiles(t, dir, "other", later, "kproxy.test")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	withTLS := func(c *Config) { c.TLSCert, c.TLSKey = cert, key }
	tests := []struct {
		name   string
		change func(c *Config)
		want   []string
	}{
		{"listener TLS", withTLS, nil},
		{"mutual TLS", func(c *Config) { withTLS(c); c.TLSClientCA = otherCert }, nil},
		{"upstream TLS, system roots", func(c *Config) { c.UpstreamTLS = true }, nil},
		{"upstream mutual TLS", func(c *Config) {
			c.UpstreamTLS, c.UpstreamCA, c.UpstreamCert, c.UpstreamKey, c.UpstreamServerName = true, otherCert, cert, key, "kafka.internal"
		}, nil},
		{"SNI", func(c *Config) { withTLS(c); c.SNIHostPattern = "broker-$(nodeId).kproxy.test" }, nil},

		{"cert without key", func(c *Config) { c.TLSCert = cert },
			[]string{`config: tls-key: required with tls-cert`}},
		{"key without cert", func(c *Config) { c.TLSKey = key },
			[]string{`config: tls-cert: required with tls-key`}},
		{"missing cert file", func(c *Config) { c.TLSCert, c.TLSKey = "/nonexistent/server.crt", key },
			[]string{`config: tls-cert "/nonexistent/server.crt": file does not exist`}},
		{"key of another certificate", func(c *Config) { c.TLSCert, c.TLSKey = cert, otherKey },
			[]string{`config: tls-key "{dir}/other.key": does not match the certificate in tls-cert {dir}/server.crt`}},
		{"certificate file without a certificate", func(c *Config) { c.TLSCert, c.TLSKey = notPEM, key },
			[]string{`config: tls-cert "{dir}/not.pem": no PEM certificate in the file`}},
		{"key file without a key", func(c *Config) { c.TLSCert, c.TLSKey = cert, notPEM },
			[]string{`config: tls-key "{dir}/not.pem": failed to find any PEM data in key input`}},
		{"client CA without listener TLS", func(c *Config) { c.TLSClientCA = otherCert },
			[]string{`config: tls-client-ca "{dir}/other.crt": needs tls-cert and tls-key: client certificates are asked for by TLS listeners`}},
		{"client CA not PEM", func(c *Config) { withTLS(c); c.TLSClientCA = notPEM },
			[]string{`config: tls-client-ca "{dir}/not.pem": no PEM certificate in the file`}},
		{"reload interval zero", func(c *Config) { c.TLSReloadInterval = 0 },
			[]string{`config: tls-reload-interval "0s": must be positive`}},

		{"upstream settings without upstream-tls", func(c *Config) {
			c.UpstreamCA, c.UpstreamServerName, c.UpstreamInsecureSkipVerify = otherCert, "kafka", true
		}, []string{
			`config: upstream-ca "{dir}/other.crt": set upstream-tls too: without it kproxy dials the brokers in plaintext`,
			`config: upstream-server-name "kafka": set upstream-tls too: without it kproxy dials the brokers in plaintext`,
			`config: upstream-insecure-skip-verify "true": set upstream-tls too: without it kproxy dials the brokers in plaintext`,
		}},
		{"upstream CA missing", func(c *Config) { c.UpstreamTLS, c.UpstreamCA = true, "/nonexistent/ca.pem" },
			[]string{`config: upstream-ca "/nonexistent/ca.pem": file does not exist`}},
		{"upstream key of another certificate", func(c *Config) { c.UpstreamTLS, c.UpstreamCert, c.UpstreamKey = true, otherCert, key },
			[]string{`config: upstream-key "{dir}/server.key": does not match the certificate in upstream-cert {dir}/other.crt`}},
		{"upstream cert without key", func(c *Config) { c.UpstreamTLS, c.UpstreamCert = true, cert },
			[]string{`config: upstream-key: required with upstream-cert`}},
		{"upstream server name with port", func(c *Config) { c.UpstreamTLS, c.UpstreamServerName = true, "kafka:9093" },
			[]string{`config: upstream-server-name "kafka:9093": want a host name, without port`}},

		{"SNI without TLS", func(c *Config) { c.SNIHostPattern = "broker-$(nodeId).kproxy.test" },
			[]string{`config: sni-host-pattern "broker-$(nodeId).kproxy.test": needs tls-cert and tls-key: the server name is read from the TLS handshake`}},
		{"SNI without placeholder", func(c *Config) { withTLS(c); c.SNIHostPattern = "broker.kproxy.test" },
			[]string{`config: sni-host-pattern "broker.kproxy.test": want $(nodeId) exactly once`}},
		{"SNI not covered", func(c *Config) { withTLS(c); c.SNIHostPattern = "broker-$(nodeId).example.com" },
			[]string{`config: sni-host-pattern "broker-$(nodeId).example.com": tls-cert {dir}/server.crt does not cover the sni-host-pattern names (want a wildcard such as *.example.com): x509: certificate is valid for *.kproxy.test, not broker-0.example.com`}},
		{"SNI with broker listeners", func(c *Config) {
			withTLS(c)
			c.SNIHostPattern = "broker-$(nodeId).kproxy.test"
			c.BrokerListeners = map[int32]string{1: "127.0.0.1:29092"}
		}, []string{`config: sni-host-pattern "broker-$(nodeId).kproxy.test": cannot be used with broker-listeners: every broker is served on the listen port`}},
		{"SNI with advertise", func(c *Config) {
			withTLS(c)
			c.SNIHostPattern = "broker-$(nodeId).kproxy.test"
			c.Advertise = "kproxy.example.com"
		}, []string{`config: sni-host-pattern "broker-$(nodeId).kproxy.test": cannot be used with advertise (kproxy.example.com): ` +
			`with SNI routing every broker is advertised as the pattern's host name; unset advertise and make the pattern's names ` +
			`resolve to kproxy (the bootstrap address is whatever name clients are seeded with)`}},
		{"sni with broker-port-base", func(c *Config) {
			withTLS(c)
			c.SNIHostPattern = "broker-$(nodeId).kproxy.test"
			c.BrokerPortBase = 29092
		}, []string{`config: sni-host-pattern "broker-$(nodeId).kproxy.test": cannot be used with broker-port-base (29092): ` +
			`with SNI routing kproxy opens no broker listeners and serves every broker on the listen port; unset broker-port-base`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(&c)
			err := c.Validate()
			var got []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					got = append(got, e.Error())
				}
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "{dir}", dir))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			var e *Error
			if err != nil && !errors.As(err, &e) {
				t.Errorf("%v is not an *Error", err)
			}
		})
	}
}

// TestWarnings: an expired or soon expiring certificate is a warning
// naming its expiry, not an error.
func TestWarnings(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	expired, expiredKey := certFiles(t, dir, "expired", now.Add(-time.Hour), "kproxy.test")
	soon, _ := certFiles(t, dir, "soon", now.Add(72*time.Hour), "kproxy.test")
	fine, _ := certFiles(t, dir, "fine", now.Add(365*24*time.Hour), "kproxy.test")
	tests := []struct {
		name   string
		change func(c *Config)
		want   []string
	}{
		{"none", func(c *Config) { c.UpstreamTLS, c.UpstreamCA = true, fine }, nil},
		{"expired listener certificate", func(c *Config) { c.TLSCert, c.TLSKey = expired, expiredKey },
			[]string{`tls-cert "{dir}/expired.crt": certificate "CN=expired" expired at 2026-11-30T23:00:00Z`}},
		{"upstream CA expiring soon", func(c *Config) { c.UpstreamTLS, c.UpstreamCA = true, soon },
			[]string{`upstream-ca "{dir}/soon.crt": certificate "CN=soon" expires at 2026-12-04T00:00:00Z`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(&c)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v; an expiry is a warning, not an error", err)
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "{dir}", dir))
			}
			if got := c.Warnings(now); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestWarningsUseWhatValidateRead: Warnings judges the certificates
// Validate read, without reading the files again (here gone since).
func TestWarningsUseWhatValidateRead(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	crt, key := certFiles(t, dir, "expired", now.Add(-time.Hour), "kproxy.test")
	c := valid()
	c.TLSCert, c.TLSKey = crt, key
	if got := c.Warnings(now); len(got) != 0 {
		t.Errorf("before Validate: %q; want no warning (nothing read yet)", got)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := os.Remove(crt); err != nil {
		t.Fatal(err)
	}
	want := `tls-cert "` + crt + `": certificate "CN=expired" expired at 2026-11-30T23:00:00Z`
	if got := c.Warnings(now); len(got) != 1 || got[0] != want {
		t.Errorf("got %q; want [%s]", got, want)
	}
}

// TestUnknownEnvWarned: a KPROXY_* variable that is no setting's is warned
// about at start, naming the variable it was probably meant to be; known
// ones and other variables are not.
func TestUnknownEnvWarned(t *testing.T) {
	t.Setenv("KPROXY_UPSTREM", "kafka:9092")
	t.Setenv("KPROXY_UPSTREAM", "127.0.0.1:9092")
	t.Setenv("KPROXYISH", "x")
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range cfg.Warnings(time.Now()) {
		if strings.Contains(w, "KPROXY") {
			got = append(got, w)
		}
	}
	want := "environment variable KPROXY_UPSTREM is not a kproxy setting and is ignored (did you mean KPROXY_UPSTREAM?)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("warnings %q; want [%q]", got, want)
	}
}
