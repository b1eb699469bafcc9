package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
)

// DefaultTLSReloadInterval is how often the listener certificate files
// are read to see whether they changed.
const DefaultTLSReloadInterval = 5 * time.Second

// tlsHandshakeTimeout bounds a TLS handshake on either side, with the
// first bytes of a client connection before it.
const tlsHandshakeTimeout = 10 * time.Second

// ListenerTLS makes every listener kproxy opens (bootstrap and broker
// nodes) speak TLS. Files are PEM; they are read, never logged.
type ListenerTLS struct {
	// CertFile is the server certificate, optionally followed by its
	// chain. Required.
	CertFile string
	// KeyFile is the certificate's private key. Required.
	KeyFile string
	// ClientCAFile, when set, makes clients present a certificate signed
	// by one of the CAs it holds; "" means clients need none.
	ClientCAFile string
	// ReloadInterval is how often the files are read to notice a change;
	// 0 means DefaultTLSReloadInterval. Proxy.ReloadTLS reloads at once
	// (SIGHUP).
	ReloadInterval time.Duration
}

// UpstreamTLS makes kproxy dial brokers with TLS. Each connection
// verifies the host name of the address it dials: the one the broker
// advertises in Metadata, or the seed's own for bootstrap connections, as
// Kafka clients do.
type UpstreamTLS struct {
	// CAFile holds the CAs broker certificates must be signed by; ""
	// means the system roots.
	CAFile string
	// CertFile and KeyFile, both set or both empty, are kproxy's client
	// certificate for brokers that require one (mutual TLS).
	CertFile string
	KeyFile  string
	// ServerName, when set, is the name verified in every broker's
	// certificate instead of the host dialed.
	ServerName string
	// InsecureSkipVerify accepts any broker certificate. Only for tests:
	// kproxy warns at start, and /healthz says so.
	InsecureSkipVerify bool
}

// clientConfig builds the tls.Config of upstream connections. ServerName
// is left for each dial to fill.
func (u *UpstreamTLS) clientConfig() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         u.ServerName,
		InsecureSkipVerify: u.InsecureSkipVerify, //nolint:gosec // only when asked for, with a warning
	}
	if u.CAFile != "" {
		pool, err := loadCAPool(u.CAFile)
		if err != nil {
			return nil, fmt.Errorf("upstream-ca: %w", err)
		}
		cfg.RootCAs = pool
	}
	if (u.CertFile == "") != (u.KeyFile == "") {
		return nil, errors.New("upstream-cert and upstream-key: set both or neither")
	}
	if u.CertFile != "" {
		cert, err := loadKeyPair(u.CertFile, u.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("upstream-cert: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// loadKeyPair reads a certificate (with its chain) and its private key.
// Errors name the files, never their contents.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("read key: %w", err)
	}
	return keyPairFromPEM(certFile, keyFile, certPEM, keyPEM)
}

// keyPairFromPEM parses a certificate and its key read from the files
// named.
func keyPairFromPEM(certFile, keyFile string, certPEM, keyPEM []byte) (tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate %s with key %s: %w", certFile, keyFile, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return tls.Certificate{}, fmt.Errorf("certificate %s: %w", certFile, err)
		}
	}
	return cert, nil
}

// loadCAPool reads a PEM file of CA certificates.
func loadCAPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return caPoolFromPEM(file, pem)
}

func caPoolFromPEM(file string, pem []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", file)
	}
	return pool, nil
}

// tlsState is the TLS setup of a Proxy, made by New; its zero value is
// plaintext on both sides.
type tlsState struct {
	// certs holds the listeners' TLS configuration; nil for plaintext.
	certs *certReloader
	// upstream is the template of broker connections' TLS configuration;
	// nil for plaintext.
	upstream *tls.Config
	// sni names nodes for SNI routing; nil when off.
	sni *sniPattern
}

// newTLSState loads the listeners' certificate, the upstream TLS
// configuration and the SNI pattern, checking that the certificate covers
// the pattern.
func newTLSState(cfg Config, log *zap.Logger) (tlsState, error) {
	var ts tlsState
	if cfg.SNIHostPattern != "" {
		sni, err := parseSNIPattern(cfg.SNIHostPattern)
		if err != nil {
			return ts, fmt.Errorf("proxy: sni-host-pattern %q: %w", cfg.SNIHostPattern, err)
		}
		ts.sni = sni
	}
	if cfg.TLS != nil {
		var check func(*x509.Certificate) error
		if ts.sni != nil {
			check = ts.sni.covered
		}
		certs, err := newCertReloader(*cfg.TLS, check, log)
		if err != nil {
			return ts, err
		}
		ts.certs = certs
	}
	if cfg.UpstreamTLS != nil {
		upstream, err := cfg.UpstreamTLS.clientConfig()
		if err != nil {
			return ts, fmt.Errorf("proxy: %w", err)
		}
		ts.upstream = upstream
	}
	return ts, nil
}

// ReloadTLS reads the listeners' certificate, key and client CA files
// again and uses them for new connections; connections already open keep
// theirs. On failure the previous certificate stays, and the error says
// why (it is logged too). Without listener TLS it does nothing. serve calls
// it on SIGHUP; the files are also polled for changes.
func (p *Proxy) ReloadTLS() error {
	if p.tls.certs == nil {
		return nil
	}
	return p.tls.certs.reload(true)
}

// InsecureUpstreamWarning is logged at start, and shown by /healthz, when
// broker certificates are not verified.
const InsecureUpstreamWarning = "INSECURE: upstream-insecure-skip-verify is set: broker certificates are not verified, " +
	"so anyone on the network path can read and change the traffic; use it only for tests"

// logTLS says at start how TLS is set up, and warns when broker
// certificates are not verified.
func (p *Proxy) logTLS() {
	if p.cfg.TLS != nil {
		p.log.Info("listeners speak TLS", zap.String("cert_file", p.cfg.TLS.CertFile),
			zap.Bool("client_certificates_required", p.cfg.TLS.ClientCAFile != ""),
			zap.String("sni_host_pattern", p.cfg.SNIHostPattern))
	}
	if u := p.cfg.UpstreamTLS; u != nil {
		p.log.Info("dialing brokers with TLS", zap.String("ca_file", u.CAFile),
			zap.Bool("client_certificate", u.CertFile != ""), zap.String("server_name", u.ServerName))
		if u.InsecureSkipVerify {
			p.log.Warn(InsecureUpstreamWarning)
		}
	}
}
