package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/proxy"
)

// ExpiryWarningWindow is how long before a certificate expires Warnings
// starts naming it.
const ExpiryWarningWindow = 14 * 24 * time.Hour

// certFile is the certificates of a file a setting names, as validation
// read them: Warnings judges their expiry without reading them again.
type certFile struct {
	key, file string
	certs     []*x509.Certificate
}

// checkTLS checks the TLS settings of both sides: pairs set together,
// files that exist and parse, keys that match their certificates, the SNI
// pattern and the settings that mean nothing without another one. Key
// files are read to check them, never quoted. The certificates that parse
// are kept in c.certs, in the order Warnings names them.
func checkTLS(p *problems, c *Config) {
	c.certs = nil
	keep := func(key, file string, certs []*x509.Certificate) {
		if len(certs) > 0 {
			c.certs = append(c.certs, certFile{key: key, file: file, certs: certs})
		}
	}
	leaf, certs := checkKeyPair(p, KeyTLSCert, c.TLSCert, KeyTLSKey, c.TLSKey)
	keep(KeyTLSCert, c.TLSCert, certs)
	if c.TLSClientCA != "" {
		if c.TLSCert == "" {
			p.add(KeyTLSClientCA, c.TLSClientCA, "needs tls-cert and tls-key: client certificates are asked for by TLS listeners")
		}
		keep(KeyTLSClientCA, c.TLSClientCA, checkCAFile(p, KeyTLSClientCA, c.TLSClientCA))
	}
	checkPositive(p, KeyTLSReloadInterval, c.TLSReloadInterval)
	if c.SNIHostPattern != "" {
		switch {
		case c.TLSCert == "":
			p.add(KeySNIHostPattern, c.SNIHostPattern, "needs tls-cert and tls-key: the server name is read from the TLS handshake")
		case len(c.BrokerListeners) > 0:
			p.add(KeySNIHostPattern, c.SNIHostPattern, "cannot be used with broker-listeners: every broker is served on the listen port")
		case c.Advertise != "":
			// Silently ignoring advertise would send clients to names
			// nobody chose; say which one wins instead.
			p.add(KeySNIHostPattern, c.SNIHostPattern, "cannot be used with advertise ("+c.Advertise+"): with SNI routing "+
				"every broker is advertised as the pattern's host name; unset advertise and make the pattern's names "+
				"resolve to kproxy (the bootstrap address is whatever name clients are seeded with)")
		case c.BrokerPortBase != DefaultBrokerPortBase:
			p.add(KeySNIHostPattern, c.SNIHostPattern, "cannot be used with broker-port-base ("+strconv.Itoa(c.BrokerPortBase)+
				"): with SNI routing kproxy opens no broker listeners and serves every broker on the listen port; unset broker-port-base")
		default:
			if err := proxy.CheckSNIHostPattern(c.SNIHostPattern, nil); err != nil {
				p.add(KeySNIHostPattern, c.SNIHostPattern, err.Error())
			} else if err := proxy.CheckSNIHostPattern(c.SNIHostPattern, leaf); err != nil {
				p.add(KeySNIHostPattern, c.SNIHostPattern, "tls-cert "+c.TLSCert+" "+err.Error())
			}
		}
	}

	if !c.UpstreamTLS {
		for _, s := range []struct{ key, value string }{
			{KeyUpstreamCA, c.UpstreamCA}, {KeyUpstreamCert, c.UpstreamCert}, {KeyUpstreamKey, c.UpstreamKey},
			{KeyUpstreamServerName, c.UpstreamServerName},
		} {
			if s.value != "" {
				p.add(s.key, s.value, "set upstream-tls too: without it kproxy dials the brokers in plaintext")
			}
		}
		if c.UpstreamInsecureSkipVerify {
			p.add(KeyUpstreamInsecureSkipVerify, "true", "set upstream-tls too: without it kproxy dials the brokers in plaintext")
		}
		return
	}
	if c.UpstreamCA != "" {
		keep(KeyUpstreamCA, c.UpstreamCA, checkCAFile(p, KeyUpstreamCA, c.UpstreamCA))
	}
	_, certs = checkKeyPair(p, KeyUpstreamCert, c.UpstreamCert, KeyUpstreamKey, c.UpstreamKey)
	keep(KeyUpstreamCert, c.UpstreamCert, certs)
	if strings.ContainsAny(c.UpstreamServerName, " :/") {
		p.add(KeyUpstreamServerName, c.UpstreamServerName, "want a host name, without port")
	}
}

// checkKeyPair checks a certificate file and its key file, set both or
// neither, and returns, when they are usable, the certificate and every
// certificate of the file (its chain).
func checkKeyPair(p *problems, certKey, certFile, keyKey, keyFile string) (*x509.Certificate, []*x509.Certificate) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case keyFile == "":
		p.add(keyKey, "", "required with "+certKey)
		return nil, nil
	case certFile == "":
		p.add(certKey, "", "required with "+keyKey)
		return nil, nil
	}
	certPEM, ok := readSettingFile(p, certKey, certFile)
	keyPEM, keyOK := readSettingFile(p, keyKey, keyFile)
	if !ok || !keyOK {
		return nil, nil
	}
	chain, err := parseCertificates(certPEM)
	if err != nil {
		p.add(certKey, certFile, err.Error())
		return nil, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The certificate parsed, so the key is at fault: unreadable or
		// not the certificate's.
		reason := strings.TrimPrefix(err.Error(), "tls: ")
		if strings.Contains(reason, "does not match") {
			reason = "does not match the certificate in " + certKey + " " + certFile
		}
		p.add(keyKey, keyFile, reason)
		return nil, nil
	}
	return pair.Leaf, chain
}

// checkCAFile checks a file of CA certificates and returns them.
func checkCAFile(p *problems, key, file string) []*x509.Certificate {
	b, ok := readSettingFile(p, key, file)
	if !ok {
		return nil
	}
	certs, err := parseCertificates(b)
	if err != nil {
		p.add(key, file, err.Error())
	}
	return certs
}

// readSettingFile reads a file a setting names, adding a problem when it cannot.
func readSettingFile(p *problems, key, file string) ([]byte, bool) {
	b, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.add(key, file, "file does not exist")
	case errors.Is(err, fs.ErrPermission):
		p.add(key, file, "file not readable (permission denied)")
	case err != nil:
		p.add(key, file, "cannot read: "+err.Error())
	default:
		return b, true
	}
	return nil, false
}

// parseCertificates reads every PEM certificate of a file, which must hold
// at least one.
func parseCertificates(b []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate does not parse: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate in the file")
	}
	return certs, nil
}

// Warnings are what deserves a warning at start without being an error:
// a KPROXY_* variable that is no setting's (naming the nearest), a
// certificate that has expired or expires within ExpiryWarningWindow
// (naming when), or that is not valid yet. Each names its setting. now is
// the time to judge expiry by. It judges the certificates that Validate
// (or Load, which validates) read: none before. (Unverified broker
// certificates are warned about by the proxy itself,
// proxy.InsecureUpstreamWarning.)
func (c *Config) Warnings(now time.Time) []string {
	out := append([]string(nil), c.unknownEnv...)
	for _, f := range c.certs {
		for _, cert := range f.certs {
			name := fmt.Sprintf("%s %q: certificate %q", f.key, f.file, cert.Subject.String())
			switch {
			case now.After(cert.NotAfter):
				out = append(out, fmt.Sprintf("%s expired at %s", name, cert.NotAfter.UTC().Format(time.RFC3339)))
			case cert.NotAfter.Sub(now) < ExpiryWarningWindow:
				out = append(out, fmt.Sprintf("%s expires at %s", name, cert.NotAfter.UTC().Format(time.RFC3339)))
			case now.Before(cert.NotBefore):
				out = append(out, fmt.Sprintf("%s is not valid before %s", name, cert.NotBefore.UTC().Format(time.RFC3339)))
			}
		}
	}
	return out
}
