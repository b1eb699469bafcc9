package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// SaslHandshake v0 (KIP-43; kafka-python 2.0.2, Sarama up to 1.40.1,
// aiokafka up to 0.12 still send it, and Kafka 3.x brokers accept it) is
// followed by bare SASL tokens, framed only by a 4-byte size, with no Kafka
// header: the broker answers each with a bare token (PLAIN: an empty one,
// four zero bytes). Kafka's SaslServerAuthenticator reads them until its
// SaslServer completes, answers a token only when it has something to send,
// and closes the connection on failure (v0 has no error response). So the
// end of the exchange depends on the mechanism:
//
//   - PLAIN: one token, one (empty) answer.
//   - SCRAM-SHA-256, SCRAM-SHA-512: client-first / server-first, then
//     client-final / server-final.
//   - OAUTHBEARER: one token; an empty answer is success. A non-empty one is
//     an error challenge, after which the client sends one more token and
//     the broker closes.
//   - GSSAPI and anything else: the client's last token may get no answer at
//     all, so kproxy cannot tell where Kafka requests start again.
//
// kproxy forwards tokens untouched, unobserved and without correlation
// tracking, in lockstep (one client token, then the broker's answer, before
// the next client frame is read) for the mechanisms above, then goes back
// to Kafka framing. For the others it forwards the rest of the connection as
// opaque bytes in both directions, unobserved; at shutdown such a
// connection is closed at once, as kproxy cannot see its request
// boundaries. The same lockstep applies to the SaslHandshake v0 request
// itself: the next client frame is read only once its response said
// whether tokens follow.

// saslMode says how the request pump reads the next client frame.
type saslMode int

const (
	saslOff    saslMode = iota // Kafka requests
	saslTokens                 // a bare SASL token
	saslOpaque                 // no framing: copy bytes until the connection ends
)

// saslKind marks the pending entries of the SASL v0 exchange.
type saslKind uint8

const (
	saslNone      saslKind = iota
	saslHandshake          // a SaslHandshake v0 request
	saslToken              // a bare SASL token
)

// errOpaque ends the response pump's framed loop: the rest of the
// connection is copied as opaque bytes.
var errOpaque = errors.New("proxy: SASL v0 exchange kproxy cannot delimit")

// saslRounds is how many token round trips a mechanism takes after
// SaslHandshake v0, or false when kproxy cannot tell.
func saslRounds(mechanism string) (int, bool) {
	switch mechanism {
	case "PLAIN", "OAUTHBEARER":
		return 1, true
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		return 2, true
	}
	return 0, false
}

// mechanismName is a mechanism as logged: SASL payloads are never logged,
// and the mechanism a client asks for is shown only when it is a well-known
// name.
func mechanismName(mechanism string) string {
	switch mechanism {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM":
		return mechanism
	}
	return "other"
}

// saslHandshakeV0 marks p, a SaslHandshake v0 request (frame, without its
// size) about to be forwarded, remembering the mechanism it asks for. The
// request pump then waits (awaitSASL) for the response pump to say how to
// read the next client frame.
func (c *conn) saslHandshakeV0(p *pending, frame []byte) {
	p.sasl = saslHandshake
	p.mechanism = handshakeMechanism(frame)
	if c.saslNext == nil {
		c.saslNext = make(chan saslMode, 1)
	}
}

// handshakeMechanism reads the mechanism of a SaslHandshake request frame
// (without its size), or "" when it does not parse.
func handshakeMechanism(frame []byte) string {
	h, err := decode.ParseRequestHeader(frame)
	if err != nil {
		return ""
	}
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = h.APIVersion
	if err := req.ReadFrom(frame[h.Len:]); err != nil {
		return ""
	}
	return req.Mechanism
}

// forwardToken forwards one bare SASL token from the client, unread.
func (c *conn) forwardToken(br *bufio.Reader, prefix [4]byte, size int32, at time.Time) error {
	if err := c.checkSize(prefix, size, 0, c.p.cfg.MaxFrameSize, "SASL token"); err != nil {
		return err
	}
	c.p.stats.requestFrames.Add(1)
	c.p.stats.bytesFromClients.Add(uint64(size) + 4)
	c.pending.push(pending{key: -1, sasl: saslToken, at: at})
	if _, err := streamFrame(c.upstream, br, c.client, prefix, nil, int(size), c.p.copyMode); err != nil {
		c.log.Debug("SASL token forwarding failed", zap.Error(err))
		return err
	}
	return nil
}

// awaitSASL waits for the response pump to say how the next client frame is
// read, or for it to end.
func (c *conn) awaitSASL() (saslMode, error) {
	select {
	case m := <-c.saslNext:
		return m, nil
	case <-c.respDone:
		return saslOff, net.ErrClosed
	}
}

// handshakeAnswered runs once a SaslHandshake v0 response (resp, without
// its size) was forwarded: it plans the token exchange and tells the
// request pump how to go on.
func (c *conn) handshakeAnswered(p pending, resp []byte) error {
	ok, parsed := handshakeSucceeded(resp)
	mode := saslOff
	switch {
	case !parsed:
		// Cannot tell whether tokens follow: safe either way.
		mode = saslOpaque
	case ok:
		rounds, known := saslRounds(p.mechanism)
		if !known {
			mode = saslOpaque
			break
		}
		mode, c.saslMechanism, c.saslLeft = saslTokens, p.mechanism, rounds
	}
	return c.saslStep(mode, p.mechanism)
}

// handshakeSucceeded reports whether a SaslHandshake v0 response says the
// mechanism was accepted, and whether it parsed.
func handshakeSucceeded(resp []byte) (ok, parsed bool) {
	hl, err := decode.ResponseHeaderLen(int16(kmsg.SASLHandshake), 0, resp)
	if err != nil {
		return false, false
	}
	r := kmsg.NewPtrSASLHandshakeResponse()
	r.SetVersion(0)
	if err := r.ReadFrom(resp[hl:]); err != nil {
		return false, false
	}
	return r.ErrorCode == 0, true
}

// forwardTokenResponse forwards the broker's bare token answering the
// client's, unread, and tells the request pump whether more tokens follow.
func (c *conn) forwardTokenResponse(br *bufio.Reader, prefix [4]byte, size int32) error {
	if err := c.checkSize(prefix, size, 0, c.p.cfg.MaxFrameSize, "SASL token response"); err != nil {
		return err
	}
	c.p.stats.responseFrames.Add(1)
	c.p.stats.bytesFromBrokers.Add(uint64(size) + 4)
	if _, err := streamFrame(c.client, br, c.upstream, prefix, nil, int(size), c.p.copyMode); err != nil {
		c.log.Debug("SASL token forwarding failed", zap.Error(err))
		return err
	}
	c.pending.pop()
	c.saslLeft--
	mode := saslTokens
	switch {
	case c.saslMechanism == "OAUTHBEARER" && size > 0:
		// An error challenge: the client answers it and the broker
		// closes the connection.
		mode = saslOpaque
	case c.saslLeft <= 0:
		mode = saslOff
	}
	return c.saslStep(mode, c.saslMechanism)
}

// saslStep hands mode to the request pump, which is waiting for it; for
// opaque mode it returns errOpaque so that the response pump copies the
// rest.
func (c *conn) saslStep(mode saslMode, mechanism string) error {
	c.saslNext <- mode // buffered, and the request pump waits for each
	if mode != saslOpaque {
		return nil
	}
	c.p.stats.saslOpaque.Add(1)
	name := mechanismName(mechanism)
	level := zap.DebugLevel
	if c.p.once.first("sasl-v0-opaque", name) {
		level = zap.WarnLevel
	}
	c.log.Log(level, "SaslHandshake v0: kproxy cannot tell where this mechanism's bare SASL tokens end, so it "+
		"forwards the rest of the connection as opaque bytes and observes none of it (clients using SaslHandshake "+
		"v1 are observed; logged once per mechanism)", zap.String("mechanism", name))
	return errOpaque
}

// pipeClient copies the rest of the client's bytes to the broker, opaque.
func (c *conn) pipeClient(br *bufio.Reader) error {
	// Opaque bytes have no frames: no frame or idle deadline applies.
	c.setFrameDeadline(time.Time{})
	n, err := br.WriteTo(c.upstream)
	c.p.stats.bytesFromClients.Add(uint64(n))
	if c.isStopping() {
		return errStopped
	}
	if err == nil {
		err = io.EOF
	}
	return err
}

// pipeBroker copies the rest of the broker's bytes to the client, opaque.
func (c *conn) pipeBroker(br *bufio.Reader) {
	n, err := br.WriteTo(c.client)
	c.p.stats.bytesFromBrokers.Add(uint64(n))
	if err != nil && !errors.Is(err, net.ErrClosed) {
		c.log.Debug("opaque forwarding ended", zap.Error(err))
	}
}
