package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap/zapcore"

	"github.com/kproxy-dev/kproxy/decode"
)

// Upstream SASL: kproxy authenticates each connection it opens to a broker
// with its own credentials (UpstreamSASL), so that its clients need none.
// Right after the dial, before any client byte is forwarded, it sends
// ApiVersions v0 (to learn the broker's SaslAuthenticate versions),
// SaslHandshake v1 and SaslAuthenticate until the mechanism is done, as a
// Kafka client does (KIP-152). Broker discovery's connections authenticate
// the same way.
//
// KIP-368: when the broker's SaslAuthenticate (v1+) response carries a
// session lifetime (connections.max.reauth.ms, or a credential's expiry),
// the broker closes a connection whose session expired as soon as it
// receives any request other than SaslHandshake. It does not close an idle
// one. So kproxy re-authenticates a connection before forwarding a client
// request once 90% of the lifetime has passed (reauth.go): the exchange
// goes into the connection's request stream between two client requests,
// and its responses are taken off the response stream in order.

// UpstreamSASL configures kproxy authenticating to the brokers itself. The
// zero value (Mechanism "") means off: clients' own SASL exchanges are
// forwarded.
type UpstreamSASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string
	// Username is the SASL user.
	Username string
	// Password is the user's password. It is never logged: a
	// UpstreamSASL logs (String, MarshalLogObject) without it.
	Password string
}

// Enabled reports whether kproxy authenticates upstream.
func (s UpstreamSASL) Enabled() bool { return s.Mechanism != "" }

// String is the configuration without the password.
func (s UpstreamSASL) String() string {
	if !s.Enabled() {
		return "off"
	}
	return s.Mechanism + " as " + s.Username
}

// MarshalLogObject logs the mechanism and user, never the password.
func (s UpstreamSASL) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("mechanism", s.Mechanism)
	enc.AddString("username", s.Username)
	return nil
}

var (
	_ fmt.Stringer            = UpstreamSASL{}
	_ zapcore.ObjectMarshaler = UpstreamSASL{}
)

// UpstreamSASLMechanisms are the mechanisms kproxy can authenticate with.
var UpstreamSASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// mechanism builds the franz-go mechanism that computes the client's
// messages.
func (s UpstreamSASL) mechanism() (sasl.Mechanism, error) {
	switch s.Mechanism {
	case "PLAIN":
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("unknown SASL mechanism %q (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", s.Mechanism)
}

func (s UpstreamSASL) validate() error {
	if !s.Enabled() {
		if s.Username != "" || s.Password != "" {
			return errors.New("proxy: upstream SASL: a username or password without a mechanism")
		}
		return nil
	}
	if _, err := s.mechanism(); err != nil {
		return fmt.Errorf("proxy: upstream SASL: %w", err)
	}
	if s.Username == "" {
		return errors.New("proxy: upstream SASL: username required")
	}
	if s.Password == "" {
		return errors.New("proxy: upstream SASL: password required")
	}
	return nil
}

// errAuth marks a failed upstream authentication (as opposed to a network
// failure), so that logs can say what to check.
var errAuth = errors.New("upstream SASL authentication failed")

// saslSession is what an authenticated upstream connection keeps for
// re-authentication.
type saslSession struct {
	// authVersion is the SaslAuthenticate version both kmsg and the
	// broker support.
	authVersion int16
	// reauthAt is when kproxy re-authenticates before the next request;
	// zero when the broker set no session lifetime.
	reauthAt time.Time
}

// roundTripper sends one request on an upstream connection and returns its
// response: directly on a fresh connection, or through the pumps on a live
// one (reauth.go).
type roundTripper func(req kmsg.Request) (kmsg.Response, error)

// authenticateNew authenticates a freshly dialed upstream connection,
// within DialTimeout per request, and clears the deadline it set.
func (p *Proxy) authenticateNew(ctx context.Context, nc net.Conn, addr string) (saslSession, error) {
	br := bufio.NewReaderSize(nc, readBufSize)
	corr := int32(0)
	rt := func(req kmsg.Request) (kmsg.Response, error) {
		corr++
		return p.discoveryRequest(nc, br, req, corr)
	}
	defer nc.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()

	resp, err := rt(kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		return saslSession{}, fmt.Errorf("ApiVersions: %w", err)
	}
	versions := resp.(*kmsg.ApiVersionsResponse)
	if versions.ErrorCode != 0 {
		return saslSession{}, fmt.Errorf("ApiVersions: error %s", decode.ErrorName(versions.ErrorCode))
	}
	s := saslSession{authVersion: -1}
	for _, k := range versions.ApiKeys {
		if k.ApiKey == int16(kmsg.SASLAuthenticate) {
			s.authVersion = min(k.MaxVersion, kmsg.NewPtrSASLAuthenticateRequest().MaxVersion())
		}
	}
	if s.authVersion < 0 {
		return saslSession{}, errors.New("the broker does not support SaslAuthenticate (Kafka 1.0 or later needed)")
	}
	s.reauthAt, err = p.saslExchange(ctx, rt, addr, s.authVersion)
	return s, err
}

// saslExchange runs SaslHandshake v1 and SaslAuthenticate at version v
// through rt, and returns when to re-authenticate (zero: never). No SASL
// payload is ever part of an error or a log line.
func (p *Proxy) saslExchange(ctx context.Context, rt roundTripper, addr string, v int16) (time.Time, error) {
	mech, err := p.cfg.UpstreamSASL.mechanism()
	if err != nil {
		return time.Time{}, err
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mech.Name()
	resp, err := rt(hs)
	if err != nil {
		return time.Time{}, fmt.Errorf("SaslHandshake: %w", err)
	}
	if hr := resp.(*kmsg.SASLHandshakeResponse); hr.ErrorCode != 0 {
		return time.Time{}, fmt.Errorf("%w: SaslHandshake %s: %s (the broker offers %v)", errAuth, mech.Name(),
			decode.ErrorName(hr.ErrorCode), hr.SupportedMechanisms)
	}
	session, msg, err := mech.Authenticate(ctx, addr)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s: %w", errAuth, mech.Name(), err)
	}
	var lifetime int64
	start := time.Now()
	// As franz-go's client: write until the mechanism is done and has
	// nothing more to send; every SaslAuthenticate gets a response.
	for done := false; !done || len(msg) > 0; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(v)
		req.SASLAuthBytes = msg
		start = time.Now()
		resp, err := rt(req)
		if err != nil {
			return time.Time{}, fmt.Errorf("SaslAuthenticate: %w", err)
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			// The broker's message ("Authentication failed: Invalid
			// username or password") holds no secret.
			reason := decode.ErrorName(ar.ErrorCode)
			if ar.ErrorMessage != nil {
				reason += ": " + *ar.ErrorMessage
			}
			return time.Time{}, fmt.Errorf("%w: %s as %q: %s", errAuth, mech.Name(), p.cfg.UpstreamSASL.Username, reason)
		}
		lifetime = ar.SessionLifetimeMillis
		msg = nil
		if !done {
			if done, msg, err = session.Challenge(ar.SASLAuthBytes); err != nil {
				return time.Time{}, fmt.Errorf("%w: %s: %w", errAuth, mech.Name(), err)
			}
		}
	}
	return reauthTime(start, lifetime), nil
}

// maxSessionLifetime bounds a session lifetime so that a huge one cannot
// overflow a time.Duration; beyond a year it never matters.
const maxSessionLifetime = 365 * 24 * time.Hour

// reauthTime is when to re-authenticate a session of lifetimeMillis (0:
// none) whose last SaslAuthenticate was sent at start: once 90% of the
// lifetime has passed, leaving the rest for the exchange itself and for
// clock skew.
func reauthTime(start time.Time, lifetimeMillis int64) time.Time {
	if lifetimeMillis <= 0 {
		return time.Time{}
	}
	life := maxSessionLifetime
	if lifetimeMillis < int64(maxSessionLifetime/time.Millisecond) {
		life = time.Duration(lifetimeMillis) * time.Millisecond
	}
	return start.Add(life * 9 / 10)
}

// checkOpenSASLProxy refuses upstream SASL on a listener other hosts can
// reach, unless its clients must present a certificate (TLS with a client
// CA) or AllowOpenSASLProxy: whoever connects to kproxy acts on the cluster
// as kproxy's user.
func (c Config) checkOpenSASLProxy() error {
	if !c.UpstreamSASL.Enabled() || c.AllowOpenSASLProxy || (c.TLS != nil && c.TLS.ClientCAFile != "") {
		return nil
	}
	addrs := []string{c.Listen}
	for _, a := range c.BrokerListeners {
		addrs = append(addrs, a)
	}
	if a, open := OpenListener(addrs...); open {
		return fmt.Errorf("proxy: upstream SASL: listener %q is reachable from other hosts, and every client "+
			"that can connect to it acts on the cluster as %q; listen on a loopback address, require client "+
			"certificates (tls-cert, tls-key and tls-client-ca), or allow it knowingly (allow-open-sasl-proxy)",
			a, c.UpstreamSASL.Username)
	}
	return nil
}

// OpenListener returns the first of the listen addresses ("host:port")
// other hosts could reach: one whose host is not a loopback address or
// "localhost" (an empty host listens on every interface). It is the rule
// upstream SASL is held to, here and in the config package.
func OpenListener(addrs ...string) (string, bool) {
	for _, a := range addrs {
		if host, _, _ := net.SplitHostPort(a); !loopback(host) {
			return a, true
		}
	}
	return "", false
}
