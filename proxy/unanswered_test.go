package proxy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// heartbeatFrame is a Heartbeat v4 request frame built with kmsg, size
// prefix included.
func heartbeatFrame(corr int32) []byte {
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(4)
	req.Group, req.MemberID, req.Generation = "g", "m-1", 3
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("hb")).AppendRequest(nil, req, corr)
}

// TestUnansweredExchange: an observed request whose connection ends before
// its response reaches the observers with a nil Response and a zero
// ResponseAt, whichever side ends it.
func TestUnansweredExchange(t *testing.T) {
	t.Run("broker closes", func(t *testing.T) {
		rec := &recorder{}
		p := startProxy(t, fakeConfig(startFakeBroker(t, "127.0.0.1:0").addr()), zap.NewNop(), rec)
		c := dial(t, p.Addr().String())
		if _, err := c.Write(testRequest(rand.New(rand.NewPCG(1, 1)), 12, 7, dropConn, 0, 0)); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c)
		x, _ := unanswered(t, rec)
		if len(x.Request) == 0 {
			t.Error("no request bytes")
		}
	})
	t.Run("client leaves", func(t *testing.T) {
		b := startHeldBroker(t)
		rec := &recorder{}
		p := startProxy(t, fakeConfig(b.ln.Addr().String()), zap.NewNop(), rec)
		c := dial(t, p.Addr().String())
		if _, err := c.Write(heartbeatFrame(7)); err != nil {
			t.Fatal(err)
		}
		<-b.got
		c.Close()
		_, events := unanswered(t, rec)
		if len(events) != 1 || events[0].Heartbeat == nil || events[0].Responded() {
			t.Fatalf("events %+v; want one Heartbeat event without response", events)
		}
		if hb := events[0].Heartbeat; hb.MemberID != "m-1" || hb.Generation != 3 {
			t.Errorf("heartbeat %+v; want member m-1 generation 3", hb)
		}
	})
}

// unanswered waits for the one exchange rec sees and checks that it is the
// Heartbeat with correlation id 7, without a response.
func unanswered(t *testing.T, rec *recorder) (*decode.Exchange, []decode.Event) {
	t.Helper()
	waitFor(t, 10*time.Second, "the unanswered exchange", func() bool {
		xs, _ := rec.snapshot()
		return len(xs) > 0
	})
	xs, events := rec.snapshot()
	if len(xs) != 1 {
		t.Fatalf("%d exchanges observed; want 1", len(xs))
	}
	x := xs[0]
	if x.Response != nil || !x.ResponseAt.IsZero() || x.Latency() != 0 {
		t.Errorf("Response %#v, ResponseAt %v, latency %v; want nil, zero, 0", x.Response, x.ResponseAt, x.Latency())
	}
	if x.APIKey != 12 || x.CorrelationID != 7 || x.RequestAt.IsZero() {
		t.Errorf("exchange %+v: want the Heartbeat request with corr 7 and its time", x)
	}
	return x, events
}

// TestExchangeWithoutResponse: whatever the caller passes for a missing
// response, the exchange has a nil Response and a zero ResponseAt.
func TestExchangeWithoutResponse(t *testing.T) {
	c := &conn{}
	for _, resp := range [][]byte{nil, {}} {
		x := c.exchange(pending{at: time.Now()}, resp, time.Now())
		if x.Response != nil || !x.ResponseAt.IsZero() {
			t.Errorf("response %#v: exchange Response %#v, ResponseAt %v; want nil, zero", resp, x.Response, x.ResponseAt)
		}
	}
	x := c.exchange(pending{at: time.Now()}, []byte{0, 0, 0, 7}, time.Now())
	if x.Response == nil || x.ResponseAt.IsZero() {
		t.Error("a response was dropped")
	}
}
