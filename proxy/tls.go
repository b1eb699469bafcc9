package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultTLSReloadInterval is how often the TLS files of either side are
// read to see whether they changed.
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
	// ReloadInterval is how often CAFile, CertFile and KeyFile are read
	// to notice a change; 0 means DefaultTLSReloadInterval.
	// Proxy.ReloadTLS reloads at once (SIGHUP). New broker connections
	// use what was loaded last; open ones keep theirs.
	ReloadInterval time.Duration
}

// files are the upstream files certReloader reads, in the order
// clientConfig takes their contents: CA, certificate, key.
func (u *UpstreamTLS) files() []string { return []string{u.CAFile, u.CertFile, u.KeyFile} }

// clientConfig builds the tls.Config of upstream connections from the
// contents of u.files() (nil for a file not set). ServerName is left for
// each dial to fill.
func (u *UpstreamTLS) clientConfig(contents [][]byte) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         u.ServerName,
		InsecureSkipVerify: u.InsecureSkipVerify, //nolint:gosec // only when asked for, with a warning
	}
	if u.CAFile != "" {
		pool, err := caPoolFromPEM(u.CAFile, contents[0])
		if err != nil {
			return nil, fmt.Errorf("upstream-ca: %w", err)
		}
		cfg.RootCAs = pool
	}
	if (u.CertFile == "") != (u.KeyFile == "") {
		return nil, errors.New("upstream-cert and upstream-key: set both or neither")
	}
	if u.CertFile != "" {
		cert, err := keyPairFromPEM(u.CertFile, u.KeyFile, contents[1], contents[2])
		if err != nil {
			return nil, fmt.Errorf("upstream-cert: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// files are the listener files certReloader reads, in the order
// serverConfig takes their contents: certificate, key, client CA.
func (l ListenerTLS) files() []string { return []string{l.CertFile, l.KeyFile, l.ClientCAFile} }

// serverConfig builds the listeners' tls.Config from the contents of
// l.files(). check, when not nil, vets the certificate (the SNI pattern
// must be covered).
func (l ListenerTLS) serverConfig(contents [][]byte, check func(*x509.Certificate) error) (*tls.Config, error) {
	cert, err := keyPairFromPEM(l.CertFile, l.KeyFile, contents[0], contents[1])
	if err != nil {
		return nil, fmt.Errorf("proxy: tls: %w", err)
	}
	if check != nil {
		if err := check(cert.Leaf); err != nil {
			return nil, fmt.Errorf("proxy: tls: certificate %s: %w", l.CertFile, err)
		}
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
	}
	if l.ClientCAFile != "" {
		pool, err := caPoolFromPEM(l.ClientCAFile, contents[2])
		if err != nil {
			return nil, fmt.Errorf("proxy: tls: client CA: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
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

// caPoolFromPEM parses the CA certificates of a PEM file read from file.
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
	// upstream holds the template of broker connections' TLS
	// configuration; nil for plaintext.
	upstream *certReloader
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
	if l := cfg.TLS; l != nil {
		var check func(*x509.Certificate) error
		if ts.sni != nil {
			check = ts.sni.covered
		}
		build := func(contents [][]byte) (*tls.Config, error) { return l.serverConfig(contents, check) }
		certs, err := newCertReloader("listener TLS certificate", "clients", l.files(), l.ReloadInterval, build, log)
		if err != nil {
			return ts, err
		}
		ts.certs = certs
	}
	if u := cfg.UpstreamTLS; u != nil {
		build := func(contents [][]byte) (*tls.Config, error) {
			cfg, err := u.clientConfig(contents)
			if err != nil {
				return nil, fmt.Errorf("proxy: %w", err)
			}
			return cfg, nil
		}
		upstream, err := newCertReloader("upstream TLS CA and client certificate", "brokers", u.files(), u.ReloadInterval,
			build, log)
		if err != nil {
			return ts, err
		}
		ts.upstream = upstream
	}
	return ts, nil
}

// reloaders are the configurations built from files: none, one or both
// sides.
func (ts *tlsState) reloaders() []*certReloader {
	var out []*certReloader
	for _, r := range []*certReloader{ts.certs, ts.upstream} {
		if r != nil && r.watched() {
			out = append(out, r)
		}
	}
	return out
}

// watch polls the files of both sides until ctx is done.
func (ts *tlsState) watch(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range ts.reloaders() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.watch(ctx) // ends when ctx is done
		}()
	}
	wg.Wait()
}

// ReloadTLS reads the TLS files of both sides again (the listeners'
// certificate, key and client CA; the brokers' CA, and kproxy's client
// certificate and key) and uses them for new connections; connections
// already open keep theirs. A side that fails keeps its previous
// configuration, and the error says why (it is logged too). Without TLS
// files it does nothing. serve calls it on SIGHUP; the files are also
// polled for changes.
func (p *Proxy) ReloadTLS() error {
	var errs []error
	for _, r := range p.tls.reloaders() {
		errs = append(errs, r.reload(true))
	}
	return errors.Join(errs...)
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
