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

// expiringBroker is a fake broker that holds connections to KIP-368 as
// Kafka does: a connection must authenticate (PLAIN) before anything but
// ApiVersions and SaslHandshake; each session lasts lifetime; once it has
// expired, any request other than SaslHandshake closes the connection. Like
// Kafka it answers a connection's requests one at a time, in order;
// a Heartbeat whose member id is "slow" takes slowFor.
type expiringBroker struct {
	ln                net.Listener
	user, pass        string
	lifetime, slowFor time.Duration
	auths             atomic.Int64 // successful SaslAuthenticate
	expiredCloses     atomic.Int64 // connections closed for an expired session
}

func startExpiringBroker(t *testing.T, user, pass string, lifetime, slowFor time.Duration) *expiringBroker {
	t.Helper()
	b := &expiringBroker{user: user, pass: pass, lifetime: lifetime, slowFor: slowFor}
	b.ln = serveFake(t, func(c net.Conn) { b.serve(t, c) })
	return b
}

func (b *expiringBroker) serve(t *testing.T, c net.Conn) {
	br := bufio.NewReader(c)
	var authed bool
	var expires time.Time
	for {
		frame, err := readBody(br)
		if err != nil {
			return
		}
		h, err := decode.ParseRequestHeader(frame)
		if err != nil {
			t.Errorf("expiring broker: %v", err)
			return
		}
		body := frame[h.Len:]
		if h.APIKey != 18 && h.APIKey != 17 && h.APIKey != 36 {
			if !authed {
				t.Errorf("expiring broker: api key %d before authentication", h.APIKey)
				return
			}
			if time.Now().After(expires) {
				b.expiredCloses.Add(1)
				return // Kafka: "session expired", connection closed
			}
		}
		var resp kmsg.Response
		switch h.APIKey {
		case 18:
			r := kmsg.NewPtrApiVersionsResponse()
			for _, k := range [][3]int16{{17, 0, 1}, {36, 0, 2}, {12, 0, 4}} {
				ak := kmsg.NewApiVersionsResponseApiKey()
				ak.ApiKey, ak.MinVersion, ak.MaxVersion = k[0], k[1], k[2]
				r.ApiKeys = append(r.ApiKeys, ak)
			}
			resp = r
		case 17:
			req := kmsg.NewPtrSASLHandshakeRequest()
			req.SetVersion(h.APIVersion)
			req.ReadFrom(body)
			r := kmsg.NewPtrSASLHandshakeResponse()
			if req.Mechanism != "PLAIN" {
				r.ErrorCode = 33
			}
			resp = r
		case 36:
			req := kmsg.NewPtrSASLAuthenticateRequest()
			req.SetVersion(h.APIVersion)
			req.ReadFrom(body)
			r := kmsg.NewPtrSASLAuthenticateResponse()
			if !bytes.Equal(req.SASLAuthBytes, []byte("\x00"+b.user+"\x00"+b.pass)) {
				r.ErrorCode = 58
			} else {
				authed, expires = true, time.Now().Add(b.lifetime)
				b.auths.Add(1)
				r.SessionLifetimeMillis = b.lifetime.Milliseconds()
			}
			resp = r
		case 12:
			req := kmsg.NewPtrHeartbeatRequest()
			req.SetVersion(h.APIVersion)
			req.ReadFrom(body)
			if req.MemberID == "slow" {
				time.Sleep(b.slowFor)
			}
			resp = kmsg.NewPtrHeartbeatResponse()
		default:
			t.Errorf("expiring broker: unexpected api key %d", h.APIKey)
			return
		}
		resp.SetVersion(h.APIVersion)
		out := binary.BigEndian.AppendUint32(make([]byte, 4, 64), uint32(h.CorrelationID))
		if resp.IsFlexible() && h.APIKey != 18 {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		putSize(out, len(out)-4)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// TestUpstreamReauthBehindInFlightRequest: kproxy authenticates upstream
// to a broker whose sessions last 400ms and that closes a connection used
// after its session expired, as Kafka does. A client without SASL sends a
// heartbeat the broker takes 700ms to answer, then, while it is in flight
// and after the session has expired, another one. kproxy renews the session
// behind the slow request and before the next: the client gets both answers
// in order on its one connection, and the broker never closes it.
func TestUpstreamReauthBehindInFlightRequest(t *testing.T) {
	b := startExpiringBroker(t, "kproxy", upstreamPassword, 400*time.Millisecond, 700*time.Millisecond)
	cfg := fakeConfig(b.ln.Addr().String())
	cfg.UpstreamSASL = UpstreamSASL{Mechanism: "PLAIN", Username: "kproxy", Password: upstreamPassword}
	log, logs := debugLogger()
	p := startProxy(t, cfg, log)
	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	send := func(corr int32, member string) {
		t.Helper()
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.SetVersion(0)
		hb.Group, hb.MemberID, hb.Generation = "g", member, 1
		if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, hb, corr)); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReader(c)
	recv := func(want int32) {
		t.Helper()
		frame, err := readBody(br)
		if err != nil {
			t.Fatalf("response %d: %v (the broker closed %d expired connections)", want, err, b.expiredCloses.Load())
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != want {
			t.Fatalf("response correlation id %d; want %d", got, want)
		}
	}
	send(1, "fast")
	recv(1)
	send(2, "slow")
	time.Sleep(500 * time.Millisecond) // the session expires while 2 is in flight
	send(3, "fast")
	recv(2)
	recv(3)
	if n := b.expiredCloses.Load(); n != 0 {
		t.Errorf("the broker closed %d connections used after their session expired; want 0", n)
	}
	if got := p.Stats().UpstreamReauthentications; got != 1 {
		t.Errorf("UpstreamReauthentications = %d; want 1", got)
	}
	if got := b.auths.Load(); got != 2 {
		t.Errorf("the broker saw %d authentications; want 2 (the first and the renewal)", got)
	}
	checkNoSecret(t, logs, upstreamPassword)
}
