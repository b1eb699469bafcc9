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

// certReloader holds a TLS configuration built from PEM files, and
// replaces it when the files change (polled every interval) or on
// Proxy.ReloadTLS. Each new connection takes the configuration current
// when it starts, so connections already up keep theirs. A reload that
// fails keeps the previous configuration and logs why. kproxy has two: the
// listeners' (certificate, key, client CA) and the brokers' side (CA,
// client certificate and key).
type certReloader struct {
	// what names the files in log lines: "listener TLS certificate".
	what string
	// peer is who checks the certificate, for the expiry warning:
	// "clients" or "brokers".
	peer string
	// files are read in this order and handed to build; "" is a setting
	// left empty, read as nil.
	files []string
	// build makes the configuration from the files' contents, vetting
	// them (a certificate must match its key, cover the SNI pattern).
	build    func(contents [][]byte) (*tls.Config, error)
	interval time.Duration
	log      *zap.Logger

	current atomic.Pointer[tls.Config]

	mu sync.Mutex // serializes reloads; guards tried
	// tried is the content of the files at the last load attempt, so that
	// a broken file is reported once, not at every poll.
	tried []byte
}

// newCertReloader loads the files once; an error here is fatal to New.
// An interval of 0 means DefaultTLSReloadInterval.
func newCertReloader(what, peer string, files []string, interval time.Duration,
	build func([][]byte) (*tls.Config, error), log *zap.Logger) (*certReloader, error) {
	if interval == 0 {
		interval = DefaultTLSReloadInterval
	}
	r := &certReloader{what: what, peer: peer, files: files, build: build, interval: interval, log: log}
	contents, err := r.read()
	if err != nil {
		return nil, err
	}
	cfg, err := r.build(contents)
	if err != nil {
		return nil, err
	}
	r.tried = joinContents(contents)
	r.current.Store(cfg)
	return r, nil
}

// config is the configuration for a new connection.
func (r *certReloader) config() *tls.Config { return r.current.Load() }

// watched reports whether there is any file to watch: an upstream side
// with the system roots and no client certificate has none.
func (r *certReloader) watched() bool {
	for _, f := range r.files {
		if f != "" {
			return true
		}
	}
	return false
}

// read reads the files; an unset one reads as nil.
func (r *certReloader) read() ([][]byte, error) {
	out := make([][]byte, len(r.files))
	for i, f := range r.files {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("proxy: %s: %w", r.what, err)
		}
		out[i] = b
	}
	return out, nil
}

// joinContents is what tried compares: each file's length before its
// bytes, so that bytes moving from one file to the next count as a change.
func joinContents(contents [][]byte) []byte {
	var out []byte
	for _, c := range contents {
		out = fmt.Appendf(out, "%d:", len(c))
		out = append(out, c...)
	}
	return out
}

// reload reads the files and, when force is set or they changed since the
// last attempt, builds and installs a new configuration. A failure keeps
// the current one and is logged; it is also returned.
func (r *certReloader) reload(force bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	contents, err := r.read()
	if err == nil {
		joined := joinContents(contents)
		if !force && bytes.Equal(joined, r.tried) {
			return nil
		}
		r.tried = joined
		var cfg *tls.Config
		if cfg, err = r.build(contents); err == nil {
			r.current.Store(cfg)
			r.logReloaded(cfg)
			return nil
		}
	}
	r.log.Error(r.what+" reload failed; keeping the previous one, which new connections go on using",
		zap.Strings("files", r.setFiles()), zap.Error(err))
	return err
}

// logReloaded says what a reload installed, and warns when its certificate
// has expired.
func (r *certReloader) logReloaded(cfg *tls.Config) {
	fields := []zap.Field{zap.Strings("files", r.setFiles())}
	var leaf *x509.Certificate
	if len(cfg.Certificates) > 0 {
		leaf = cfg.Certificates[0].Leaf
		fields = append(fields, certFields(leaf)...)
	}
	r.log.Info(r.what+" reloaded; new connections use it, connections already open keep theirs", fields...)
	if leaf != nil && time.Now().After(leaf.NotAfter) {
		r.log.Warn("the reloaded "+r.what+" has expired: "+r.peer+" will refuse it", fields...)
	}
}

// setFiles are the files that are set, for the log.
func (r *certReloader) setFiles() []string {
	var out []string
	for _, f := range r.files {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// watch polls the files until ctx is done.
func (r *certReloader) watch(ctx context.Context) {
	t := time.NewTicker(r.interval)
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
func certFields(leaf *x509.Certificate) []zap.Field {
	return []zap.Field{
		zap.String("subject", leaf.Subject.String()),
		zap.Strings("dns_names", leaf.DNSNames),
		zap.Time("not_after", leaf.NotAfter),
	}
}
