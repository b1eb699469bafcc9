package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// saslV0Broker is a fake broker speaking SaslHandshake v0 as Kafka does:
// after a successful handshake it reads bare size-framed tokens and answers
// with bare tokens as the script for the mechanism says, then serves Kafka
// requests again, answering every one with a Heartbeat v0 response.
type saslV0Broker struct {
	ln net.Listener
	// scripts maps an accepted mechanism to its token exchange.
	scripts map[string][]tokenStep

	mu     sync.Mutex
	tokens [][]byte // every client token received, in order
	errs   []string
}

// tokenStep is one client token the broker expects, and its answer (nil:
// none, as GSSAPI's last step).
type tokenStep struct {
	want, answer []byte
}

func startSASLV0Broker(t *testing.T, scripts map[string][]tokenStep) *saslV0Broker {
	t.Helper()
	b := &saslV0Broker{scripts: scripts}
	t.Cleanup(func() { // after serveFake's, once every connection is served
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errs {
			t.Errorf("fake broker: %s", e)
		}
	})
	b.ln = serveFake(t, b.serve)
	return b
}

func (b *saslV0Broker) fail(msg string) {
	b.mu.Lock()
	b.errs = append(b.errs, msg)
	b.mu.Unlock()
}

func (b *saslV0Broker) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		frame, err := readTestFrame(br)
		if err != nil {
			return
		}
		h, err := decode.ParseRequestHeader(frame[4:])
		if err != nil {
			b.fail("request header: " + err.Error())
			return
		}
		if h.APIKey != 17 {
			resp := kmsg.NewPtrHeartbeatResponse()
			c.Write(sizedV0Response(h.CorrelationID, resp.AppendTo(nil)))
			continue
		}
		hs := kmsg.NewPtrSASLHandshakeRequest()
		if err := hs.ReadFrom(frame[4+h.Len:]); err != nil {
			b.fail("SaslHandshake request: " + err.Error())
			return
		}
		script, ok := b.scripts[hs.Mechanism]
		resp := kmsg.NewPtrSASLHandshakeResponse()
		if !ok {
			resp.ErrorCode = 33 // UNSUPPORTED_SASL_MECHANISM
		}
		c.Write(sizedV0Response(h.CorrelationID, resp.AppendTo(nil)))
		for _, step := range script {
			token, err := readTestFrame(br)
			if err != nil {
				return
			}
			b.mu.Lock()
			b.tokens = append(b.tokens, token[4:])
			b.mu.Unlock()
			if !bytes.Equal(token[4:], step.want) {
				b.fail("unexpected token " + string(token[4:]))
				return
			}
			if step.answer != nil {
				c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(step.answer))))
				c.Write(step.answer)
			}
		}
	}
}

// sizedV0Response frames a v0 response body, size prefix included.
func sizedV0Response(corr int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return append(b, body...)
}

// TestSASLHandshakeV0: after a SaslHandshake v0, bare SASL tokens pass
// through untouched and unobserved, for one round trip (PLAIN), two
// (SCRAM), or, when kproxy cannot tell where they end (GSSAPI, whose last
// token gets no answer), for the rest of the connection, opaque. Either way
// a Kafka request on the same connection afterwards works, and it is
// observed unless the connection went opaque. A refused handshake leaves
// Kafka framing on.
func TestSASLHandshakeV0(t *testing.T) {
	// An empty authzid, then a user name starting with a form feed: read
	// as a Kafka header, the token is a Heartbeat (api key 12), an
	// observed api, and the secret would reach the observers.
	plain := []byte("\x00\x0calice\x00s3cret")
	scripts := map[string][]tokenStep{
		"PLAIN": {{want: plain, answer: []byte{}}},
		"SCRAM-SHA-256": {
			{want: []byte("n,,n=alice,r=c1ient"), answer: []byte("r=c1ients3rver,s=c2FsdA==,i=4096")},
			{want: []byte("c=biws,r=c1ients3rver,p=s3cret-proof"), answer: []byte("v=s3rver-signature")},
		},
		"GSSAPI": {
			{want: []byte("\x60\x82gss-s3cret-1"), answer: []byte("\x60\x82gss-reply")},
			{want: []byte("\x05\x04gss-s3cret-final")}, // no answer: Kafka sends none
		},
	}
	tests := []struct {
		mechanism string
		observed  bool // the Heartbeat after authentication is observed
		opaque    bool
	}{
		{"PLAIN", true, false},
		{"SCRAM-SHA-256", true, false},
		{"GSSAPI", false, true},
		{"NOT-A-MECHANISM", true, false}, // refused: Kafka framing goes on
	}
	for _, tt := range tests {
		t.Run(tt.mechanism, func(t *testing.T) {
			broker := startSASLV0Broker(t, scripts)
			rec := &recorder{}
			log, logs := observedLogger()
			p := startProxy(t, fakeConfig(broker.ln.Addr().String()), log, rec)
			c := dial(t, p.Addr().String())
			c.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			format := kmsg.NewRequestFormatter(kmsg.FormatterClientID("sasl-v0-client"))

			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Mechanism = tt.mechanism
			if _, err := c.Write(format.AppendRequest(nil, hs, 1)); err != nil {
				t.Fatal(err)
			}
			frame, err := readTestFrame(br)
			if err != nil {
				t.Fatalf("SaslHandshake v0 response: %v", err)
			}
			hsResp := kmsg.NewPtrSASLHandshakeResponse()
			if err := hsResp.ReadFrom(frame[8:]); err != nil {
				t.Fatal(err)
			}
			if accepted := hsResp.ErrorCode == 0; accepted != (scripts[tt.mechanism] != nil) {
				t.Fatalf("handshake error code %d", hsResp.ErrorCode)
			}
			for i, step := range scripts[tt.mechanism] {
				token := binary.BigEndian.AppendUint32(nil, uint32(len(step.want)))
				if _, err := c.Write(append(token, step.want...)); err != nil {
					t.Fatal(err)
				}
				if step.answer == nil {
					continue
				}
				got, err := readTestFrame(br)
				if err != nil {
					t.Fatalf("answer to token %d: %v", i, err)
				}
				if !bytes.Equal(got[4:], step.answer) {
					t.Fatalf("answer to token %d: %q; want %q", i, got[4:], step.answer)
				}
			}

			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Group, hb.MemberID = "g", "m"
			if _, err := c.Write(format.AppendRequest(nil, hb, 2)); err != nil {
				t.Fatal(err)
			}
			frame, err = readTestFrame(br)
			if err != nil {
				t.Fatalf("Heartbeat after SASL: %v", err)
			}
			if corr := int32(binary.BigEndian.Uint32(frame[4:])); corr != 2 {
				t.Fatalf("Heartbeat response correlation id %d; want 2", corr)
			}
			c.Close()
			waitFor(t, 10*time.Second, "the connection to end", func() bool { return p.Stats().ConnectionsOpen == 0 })

			xs, _ := rec.snapshot()
			want := 0
			if tt.observed {
				want = 1
			}
			if len(xs) != want {
				t.Fatalf("observer saw %d exchanges; want %d (the Heartbeat only when not opaque)", len(xs), want)
			}
			if want == 1 && (xs[0].APIKey != 12 || xs[0].CorrelationID != 2) {
				t.Errorf("observed api %d corr %d; want the Heartbeat, corr 2", xs[0].APIKey, xs[0].CorrelationID)
			}
			for _, x := range xs {
				if bytes.Contains(x.Request, []byte("s3cret")) || bytes.Contains(x.Response, []byte("s3rver")) {
					t.Errorf("observer saw SASL token bytes: %q / %q", x.Request, x.Response)
				}
			}
			st := p.Stats()
			if st.CorrelationMismatches != 0 || st.OversizedFrames != 0 {
				t.Errorf("stats %+v: want no mismatch, no oversized frame", st)
			}
			if got := st.SASLOpaqueConnections == 1; got != tt.opaque {
				t.Errorf("opaque connections %d; want opaque %v", st.SASLOpaqueConnections, tt.opaque)
			}
			if got := logs.FilterMessageSnippet("SaslHandshake v0").Len() == 1; got != tt.opaque {
				t.Errorf("opaque log line logged %v; want %v", got, tt.opaque)
			}
			for _, e := range logs.All() {
				for _, v := range e.ContextMap() {
					if s, ok := v.(string); ok && (bytes.Contains([]byte(s), []byte("s3cret"))) {
						t.Errorf("log line %q carries SASL token bytes", e.Message)
					}
				}
			}
		})
	}
}

// TestSASLHandshakeV0Shutdown: a connection waiting in the middle of a SASL
// v0 exchange does not hold shutdown beyond ShutdownTimeout.
func TestSASLHandshakeV0Shutdown(t *testing.T) {
	// The broker accepts PLAIN but never answers the token.
	broker := startSASLV0Broker(t, map[string][]tokenStep{"PLAIN": {{want: []byte("\x00a\x00b")}}})
	cfg := fakeConfig(broker.ln.Addr().String())
	cfg.ShutdownTimeout = 200 * time.Millisecond
	p := newProxy(t, cfg, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	c := dial(t, p.Addr().String())
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, hs, 1))
	if _, err := readTestFrame(c); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte{0, 0, 0, 4, 0, 'a', 0, 'b'})
	waitFor(t, 10*time.Second, "the token to be forwarded", func() bool { return p.Stats().RequestFrames == 2 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return: a connection waiting for a SASL token answer held shutdown")
	}
	expectClosed(t, c)
}
