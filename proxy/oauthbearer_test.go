package proxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// oauthBroker is a fake broker for OAUTHBEARER over SaslHandshake v1 and
// SaslAuthenticate v2 (kfake has no OAUTHBEARER): it accepts one token,
// gives each session a lifetime (KIP-368), and answers Heartbeat v0.
type oauthBroker struct {
	ln    net.Listener
	token string
	// auths counts the successful SaslAuthenticate requests.
	auths atomic.Int64
}

func startOAuthBroker(t *testing.T, token string) *oauthBroker {
	t.Helper()
	b := &oauthBroker{token: token}
	b.ln = serveFake(t, func(c net.Conn) { b.serve(t, c) })
	return b
}

func (b *oauthBroker) serve(t *testing.T, c net.Conn) {
	br := bufio.NewReader(c)
	for {
		frame, err := readBody(br)
		if err != nil {
			return
		}
		h, err := decode.ParseRequestHeader(frame)
		if err != nil {
			t.Errorf("oauth broker: %v", err)
			return
		}
		var resp kmsg.Response
		switch h.APIKey {
		case 17:
			req := kmsg.NewPtrSASLHandshakeRequest()
			req.SetVersion(h.APIVersion)
			req.ReadFrom(frame[h.Len:])
			r := kmsg.NewPtrSASLHandshakeResponse()
			if req.Mechanism != "OAUTHBEARER" {
				r.ErrorCode = 33 // UNSUPPORTED_SASL_MECHANISM
			}
			resp = r
		case 36:
			req := kmsg.NewPtrSASLAuthenticateRequest()
			req.SetVersion(h.APIVersion)
			req.ReadFrom(frame[h.Len:])
			r := kmsg.NewPtrSASLAuthenticateResponse()
			// RFC 7628 client response: gs2 header, then auth=Bearer.
			if !bytes.Contains(req.SASLAuthBytes, []byte("auth=Bearer "+b.token+"\x01")) {
				r.ErrorCode = 58 // SASL_AUTHENTICATION_FAILED
			} else {
				b.auths.Add(1)
				r.SessionLifetimeMillis = 1000
			}
			resp = r
		case 12:
			resp = kmsg.NewPtrHeartbeatResponse()
		default:
			t.Errorf("oauth broker: unexpected api key %d", h.APIKey)
			return
		}
		resp.SetVersion(h.APIVersion)
		out := binary.BigEndian.AppendUint32(make([]byte, 4, 64), uint32(h.CorrelationID))
		if resp.IsFlexible() {
			out = append(out, 0) // empty tag section of a flexible header
		}
		out = resp.AppendTo(out)
		putSize(out, len(out)-4)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// readBody reads one frame and returns it without its size prefix.
func readBody(br *bufio.Reader) ([]byte, error) {
	frame, err := readTestFrame(br)
	if err != nil {
		return nil, err
	}
	return frame[4:], nil
}

// TestOAuthBearerReauthenticationForwarded: a client authenticating with
// OAUTHBEARER (SaslHandshake v1, SaslAuthenticate v2) through kproxy, then
// re-authenticating on the same connection once its session lifetime has
// passed (KIP-368), gets every answer in order; the broker sees both
// authentications, and the token is in no log line and no observed exchange.
func TestOAuthBearerReauthenticationForwarded(t *testing.T) {
	const token = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.sig-5f1a"
	b := startOAuthBroker(t, token)
	rec := &recorder{}
	log, logs := debugLogger()
	p := startProxy(t, fakeConfig(b.ln.Addr().String()), log, rec)
	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	corr := int32(0)
	roundTrip := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		corr++
		if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("oauth-client")).AppendRequest(nil, req, corr)); err != nil {
			t.Fatal(err)
		}
		frame, err := readBody(br)
		if err != nil {
			t.Fatalf("%s: %v", decode.APIName(req.Key()), err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
			t.Fatalf("%s: correlation id %d; want %d", decode.APIName(req.Key()), got, corr)
		}
		hl, err := decode.ResponseHeaderLen(req.Key(), req.GetVersion(), frame)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := parseResponse(req.Key(), req.GetVersion(), frame[hl:])
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	authenticate := func() {
		t.Helper()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = "OAUTHBEARER"
		if r := roundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
			t.Fatalf("SaslHandshake: error %d", r.ErrorCode)
		}
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + token + "\x01\x01")
		r := roundTrip(auth).(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 || r.SessionLifetimeMillis != 1000 {
			t.Fatalf("SaslAuthenticate: error %d, session lifetime %d; want 0, 1000", r.ErrorCode, r.SessionLifetimeMillis)
		}
	}
	heartbeat := func() {
		t.Helper()
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.SetVersion(0)
		hb.Group, hb.MemberID, hb.Generation = "g", "m", 1
		roundTrip(hb)
	}
	authenticate()
	heartbeat()
	time.Sleep(1100 * time.Millisecond) // the session's lifetime
	authenticate()
	heartbeat()
	if n := b.auths.Load(); n != 2 {
		t.Errorf("the broker saw %d OAUTHBEARER authentications; want 2 on one connection", n)
	}
	waitFor(t, 5*time.Second, "the observer to see both heartbeats", func() bool {
		xs, _ := rec.snapshot()
		return len(xs) >= 2
	})
	xs, _ := rec.snapshot()
	for _, x := range xs {
		if x.APIKey == 17 || x.APIKey == 36 {
			t.Errorf("observer saw a SASL exchange (api key %d)", x.APIKey)
		}
		if bytes.Contains(x.Request, []byte(token)) || bytes.Contains(x.Response, []byte(token)) {
			t.Errorf("observer saw the token in a %d exchange", x.APIKey)
		}
	}
	checkNoSecret(t, logs, token)
}
