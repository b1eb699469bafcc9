package proxy

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// problems returns the warnings and errors logged, but for the decode
// failures of the random bodies these tests send.
func problems(logs *observer.ObservedLogs) []observer.LoggedEntry {
	return logs.Filter(func(e observer.LoggedEntry) bool {
		return e.Level >= zapcore.WarnLevel && !strings.Contains(e.Message, "did not decode")
	}).All()
}

// startLiarBroker accepts connections and answers each request frame with
// the frames reply returns for its correlation id.
func startLiarBroker(t *testing.T, reply func(corr int32) [][]byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					frame, err := readTestFrame(c)
					if err != nil {
						return
					}
					for _, r := range reply(int32(binary.BigEndian.Uint32(frame[8:]))) {
						if _, err := c.Write(r); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// responseOf is a response frame: size, correlation id, body.
func responseOf(corr int32, body ...byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return append(b, body...)
}

// emptyResponse is a response frame with only a correlation id.
func emptyResponse(corr int32) []byte { return responseOf(corr) }

// TestCorrelationMismatch: a response that is not for the oldest request
// in flight closes that connection with one clear log line, whether its id
// is wrong or nothing is in flight; the proxy goes on.
func TestCorrelationMismatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(corr int32) [][]byte
		field string // a field the log line must carry
	}{
		{"wrong id", func(corr int32) [][]byte { return [][]byte{emptyResponse(corr + 1)} }, "want_api"},
		{"none in flight", func(corr int32) [][]byte { return [][]byte{emptyResponse(corr), emptyResponse(corr)} }, "corr_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, logs := observedLogger()
			p := startProxy(t, fakeConfig(startLiarBroker(t, tc.reply)), log)
			c := dial(t, p.Addr().String())
			if _, err := c.Write(testRequest(rand.New(rand.NewPCG(1, 1)), 1, 5, 0, 0, 0)); err != nil {
				t.Fatal(err)
			}
			for {
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := readTestFrame(c); err != nil {
					break // closed by kproxy (a timeout fails below)
				}
			}
			expectClosed(t, c)
			if got := p.Stats().CorrelationMismatches; got != 1 {
				t.Errorf("mismatches %d; want 1", got)
			}
			waitFor(t, 5*time.Second, "the connection to end", func() bool { return p.Stats().ConnectionsOpen == 0 })
			lines := problems(logs)
			if len(lines) != 1 || !strings.Contains(lines[0].Message, "closing the connection") {
				t.Fatalf("warnings and errors %v; want the one mismatch line", lines)
			}
			if line := lines[0]; line.ContextMap()[tc.field] == nil {
				t.Errorf("log line %q %v has no %s", line.Message, line.ContextMap(), tc.field)
			}
		})
	}
}

// TestOversizedResponse: MaxFrameSize holds only for responses kproxy reads
// whole: a larger streamed (Fetch) response passes as on a direct
// connection; a larger observed one (Heartbeat) closes the connection with
// one log line naming the api.
func TestOversizedResponse(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	log, logs := observedLogger()
	cfg := fakeConfig(broker.addr())
	cfg.MaxFrameSize = 64 << 10
	p := startProxy(t, cfg, log)
	c := dial(t, p.Addr().String())
	if err := roundTrip(t, c, 1, 128<<10); err != nil {
		t.Fatalf("streamed response above the maximum frame size: %v", err)
	}
	if _, err := c.Write(testRequest(rand.New(rand.NewPCG(1, 1)), 12, 2, 128<<10, 0, 0)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)
	if got := p.Stats().OversizedFrames; got != 1 {
		t.Errorf("oversized frames %d; want 1", got)
	}
	waitFor(t, 5*time.Second, "the connection to end", func() bool { return p.Stats().ConnectionsOpen == 0 })
	lines := problems(logs)
	if len(lines) != 1 || !strings.Contains(lines[0].Message, "larger than the maximum frame size") {
		t.Fatalf("warnings and errors %v; want one oversized-response line", lines)
	}
	if api := lines[0].ContextMap()["api"]; api != "Heartbeat" {
		t.Errorf("log line api %v; want Heartbeat", api)
	}
}

// TestRepeatedFailuresLoggedOnce: a response that cannot be rewritten and a
// Produce whose acks cannot be read are forwarded, counted each time and
// logged once.
func TestRepeatedFailuresLoggedOnce(t *testing.T) {
	const n = 3
	broker := startLiarBroker(t, func(corr int32) [][]byte {
		// A Metadata v0 response body cut short (3 bytes of its broker
		// count), so it does not parse; the Produce gets it too.
		return [][]byte{responseOf(corr, 0, 0, 9)}
	})
	log, logs := observedLogger()
	p := startProxy(t, fakeConfig(broker), log)
	c := dial(t, p.Addr().String())
	// Produce v3 with a header and one body byte: no room for acks.
	shortProduce := func(corr int32) []byte {
		b := binary.BigEndian.AppendUint32(nil, 0)
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint16(b, 3)
		b = binary.BigEndian.AppendUint32(b, uint32(corr))
		b = append(b, 0xff, 0xff, 0) // null client id, one byte
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		return b
	}
	metadata := func(corr int32) []byte {
		b := binary.BigEndian.AppendUint32(nil, 0)
		b = binary.BigEndian.AppendUint16(b, 3)
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(corr))
		b = append(b, 0xff, 0xff, 0, 0, 0, 0) // null client id, no topics
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		return b
	}
	for corr := range int32(n) {
		for i, req := range [][]byte{shortProduce(2 * corr), metadata(2*corr + 1)} {
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			resp, err := readTestFrame(c)
			if err != nil {
				t.Fatalf("response %d: %v", 2*int(corr)+i, err)
			}
			if got := int32(binary.BigEndian.Uint32(resp[4:])); got != 2*corr+int32(i) {
				t.Fatalf("response corr %d; want %d", got, 2*corr+int32(i))
			}
		}
	}
	if got := p.Stats().RewriteFailures; got != n {
		t.Errorf("rewrite failures %d; want %d", got, n)
	}
	for _, snippet := range []string{"response not rewritten", "cannot read acks"} {
		if got := logs.FilterMessageSnippet(snippet).Len(); got != 1 {
			t.Errorf("%d %q log lines; want 1", got, snippet)
		}
	}
}
