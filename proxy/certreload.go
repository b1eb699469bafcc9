package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// certReloader holds the listeners' TLS configuration and replaces it when
// the certificate, key or client CA files change (polled every
// ReloadInterval) or on Proxy.ReloadTLS. Each new connection takes the
// configuration current when it arrives, so connections already up keep
// theirs. A reload that fails keeps the previous configuration and logs
// why.
type certReloader struct {
	files ListenerTLS
	// check vets a certificate before it is used (the SNI pattern must be
	// covered); nil means none.
	check func(*x509.Certificate) error
	log   *zap.Logger

	current atomic.Pointer[tls.Config]

	mu sync.Mutex // serializes reloads; guards tried
	// tried is the content of the files at the last load attempt, so that
	// a broken file is reported once, not at every poll.
	tried []byte
}

// newCertReloader loads the files once; an error here is fatal to New.
func newCertReloader(files ListenerTLS, check func(*x509.Certificate) error, log *zap.Logger) (*certReloader, error) {
	if files.ReloadInterval == 0 {
		files.ReloadInterval = DefaultTLSReloadInterval
	}
	r := &certReloader{files: files, check: check, log: log}
	contents, err := r.read()
	if err != nil {
		return nil, err
	}
	cfg, err := r.build(contents)
	if err != nil {
		return nil, err
	}
	r.tried = bytes.Join(contents, nil)
	r.current.Store(cfg)
	return r, nil
}

// config is the configuration for a new connection.
func (r *certReloader) config() *tls.Config { return r.current.Load() }

// read reads the certificate, key and client CA files (the last is nil
// when there is none).
func (r *certReloader) read() ([][]byte, error) {
	files := []string{r.files.CertFile, r.files.KeyFile}
	if r.files.ClientCAFile != "" {
		files = append(files, r.files.ClientCAFile)
	}
	out := make([][]byte, 3)
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("proxy: tls: %w", err)
		}
		out[i] = b
	}
	return out, nil
}

// build makes the server configuration from the files' contents.
func (r *certReloader) build(contents [][]byte) (*tls.Config, error) {
	cert, err := keyPairFromPEM(r.files.CertFile, r.files.KeyFile, contents[0], contents[1])
	if err != nil {
		return nil, fmt.Errorf("proxy: tls: %w", err)
	}
	if r.check != nil {
		if err := r.check(cert.Leaf); err != nil {
			return nil, fmt.Errorf("proxy: tls: certificate %s: %w", r.files.CertFile, err)
		}
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
	}
	if r.files.ClientCAFile != "" {
		pool, err := caPoolFromPEM(r.files.ClientCAFile, contents[2])
		if err != nil {
			return nil, fmt.Errorf("proxy: tls: client CA: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// reload reads the files and, when force is set or they changed since the
// last attempt, builds and installs a new configuration. A failure keeps
// the current one and is logged; it is also returned.
func (r *certReloader) reload(force bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	contents, err := r.read()
	if err == nil {
		joined := bytes.Join(contents, nil)
		if !force && bytes.Equal(joined, r.tried) {
			return nil
		}
		r.tried = joined
		var cfg *tls.Config
		if cfg, err = r.build(contents); err == nil {
			r.current.Store(cfg)
			leaf := cfg.Certificates[0].Leaf
			r.log.Info("listener TLS certificate reloaded; new connections use it, connections already open keep theirs",
				certFields(r.files.CertFile, leaf)...)
			if time.Now().After(leaf.NotAfter) {
				r.log.Warn("the reloaded listener TLS certificate has expired: clients will refuse it",
					certFields(r.files.CertFile, leaf)...)
			}
			return nil
		}
	}
	r.log.Error("listener TLS certificate reload failed; keeping the previous certificate",
		zap.String("cert_file", r.files.CertFile), zap.String("key_file", r.files.KeyFile), zap.Error(err))
	return err
}

// watch polls the files until ctx is done.
func (r *certReloader) watch(ctx context.Context) {
	t := time.NewTicker(r.files.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.reload(false) //nolint:errcheck // logged
		}
	}
}

// certFields describe a certificate for the log: never its key.
func certFields(file string, leaf *x509.Certificate) []zap.Field {
	return []zap.Field{
		zap.String("cert_file", file),
		zap.String("subject", leaf.Subject.String()),
		zap.Strings("dns_names", leaf.DNSNames),
		zap.Time("not_after", leaf.NotAfter),
	}
}
