package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// authenticateUpstream authenticates a freshly dialed upstream connection
// with kproxy's own credentials when UpstreamSASL is on (upstreamsasl.go),
// before any client byte is forwarded. A failure is logged here.
func (c *conn) authenticateUpstream(ctx context.Context, up net.Conn) error {
	if !c.p.cfg.UpstreamSASL.Enabled() {
		return nil
	}
	s, err := c.p.authenticateNew(ctx, up, up.RemoteAddr().String())
	if err != nil {
		c.upstreamAuthFailed(ctx, err)
		return err
	}
	c.sasl = s
	return nil
}

// upstreamAuthFailed logs and counts a failed upstream authentication.
func (c *conn) upstreamAuthFailed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		c.log.Debug("shutting down: upstream SASL authentication abandoned", zap.Error(err))
		return
	}
	c.p.stats.upstreamSASLFailures.Add(1)
	msg := "cannot authenticate to the broker with kproxy's SASL credentials; closing the client connection"
	if errors.Is(err, errAuth) {
		msg += " (check the upstream SASL mechanism, username and password)"
	}
	c.log.Error(msg, zap.Object("upstream_sasl", c.p.cfg.UpstreamSASL), zap.Error(err))
}

// reauthDue reports whether the connection's SASL session must be renewed
// before the request read at is forwarded (KIP-368).
func (c *conn) reauthDue(at time.Time) bool {
	return !c.sasl.reauthAt.IsZero() && !at.Before(c.sasl.reauthAt)
}

// reauthenticate renews the upstream SASL session on the live connection.
// It runs on the request pump between two client requests, so no client
// request reaches the broker while the session is renewed; responses to
// client requests sent before it still flow to the client meanwhile.
func (c *conn) reauthenticate(ctx context.Context) error {
	at, err := c.p.saslExchange(ctx, c.internalRoundTrip, c.upstream.RemoteAddr().String(), c.sasl.authVersion)
	if err != nil {
		if !errors.Is(err, net.ErrClosed) {
			c.upstreamAuthFailed(ctx, fmt.Errorf("re-authentication: %w", err))
		}
		return err
	}
	c.p.stats.upstreamReauths.Add(1)
	c.log.Debug("re-authenticated to the broker (KIP-368)", zap.Time("next_reauth", at))
	c.sasl.reauthAt = at
	return nil
}

// internalRoundTrip sends kproxy's own request on the live upstream
// connection, behind the client requests in flight, and waits for the
// response pump to hand its response back (takeInternal). Only the request
// pump calls it, so requests to the broker stay whole and in order.
func (c *conn) internalRoundTrip(req kmsg.Request) (kmsg.Response, error) {
	c.internalCorr++
	corr := c.internalCorr
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kproxy")).AppendRequest(nil, req, corr)
	ch := make(chan []byte, 1)
	c.pending.push(pending{key: req.Key(), version: req.GetVersion(), corrID: corr, at: time.Now(), internal: ch})
	if _, err := c.upstream.Write(frame); err != nil {
		return nil, err
	}
	// No timeout of its own: the response comes after those of the
	// client requests before it, and a JoinGroup may rightly take
	// minutes. A broker that never answers is the client's problem too;
	// shutdown closes the connection.
	var body []byte
	select {
	case body = <-ch:
	case <-c.respDone:
		return nil, net.ErrClosed
	}
	hl, err := decode.ResponseHeaderLen(req.Key(), req.GetVersion(), body)
	if err != nil {
		return nil, err
	}
	return parseResponse(req.Key(), req.GetVersion(), body[hl:])
}

// takeInternal reads the response to kproxy's own request p off the
// upstream connection and hands it to internalRoundTrip: it never reaches
// the client, is not counted as forwarded, and is never observed.
func (c *conn) takeInternal(br *bufio.Reader, prefix [4]byte, size int32, p pending) error {
	if size > c.p.cfg.MaxFrameSize {
		c.p.stats.oversizedFrames.Add(1)
		c.log.Error("response to kproxy's own request larger than the maximum frame size; closing the connection",
			zap.String("api", decode.APIName(p.key)), zap.Int32("size", size))
		return errOversized
	}
	frame, err := readFrame(br, prefix, size)
	if err != nil {
		c.upstreamEnded(err)
		return err
	}
	c.pending.pop()
	p.internal <- frame[4:] // buffered: one response per request
	return nil
}

// refuseClientSASL closes a client connection that starts its own SASL
// exchange while kproxy authenticates upstream: the broker connection is
// already authenticated as kproxy's user, and the client's exchange would
// fail there with a less clear error.
func (c *conn) refuseClientSASL(key int16) error {
	level := zap.DebugLevel
	if c.p.once.first("client-sasl-upstream", key) {
		level = zap.WarnLevel
	}
	c.log.Log(level, "a client sent its own SASL request, but kproxy authenticates to the brokers itself (upstream "+
		"SASL): configure the client without SASL (security.protocol=PLAINTEXT, or SSL when kproxy's listeners use "+
		"TLS); closing (logged once per api, then at debug)", zap.String("api", decode.APIName(key)))
	return errClientSASL
}

var errClientSASL = errors.New("proxy: client SASL while kproxy authenticates upstream")
