package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// testFrame is one request of a byte-exactness plan.
type testFrame struct {
	key      int16
	acks     int16 // Produce only
	pad      int   // request body bytes
	respSize int32 // response body bytes after the correlation id
	// clientID and txnID (Produce) are null when nil.
	clientID, txnID *string
}

// exactPlan returns requests and responses of random sizes up to 8 MiB,
// with the sizes around every buffer boundary, through every path: streamed
// (Fetch), streamed without response (Produce acks=0, also with ids too
// long to peek), buffered and
// observed (Heartbeat), and buffered for a rewrite that fails on random
// bytes (Metadata).
func exactPlan(rng *rand.Rand) []testFrame {
	const max = 8 << 20
	var plan []testFrame
	for _, n := range []int{0, 1, readBufSize - 1, readBufSize, readBufSize + 1, copyBufSize - 1, copyBufSize,
		copyBufSize + 1, 2*copyBufSize + 1, 1 << 20, max - 64} {
		plan = append(plan, testFrame{key: 1, pad: n, respSize: int32(n)})
	}
	for range 3 {
		plan = append(plan, testFrame{key: 1, pad: rng.IntN(max), respSize: int32(rng.IntN(max))})
	}
	for range 20 {
		plan = append(plan,
			testFrame{key: 1, pad: rng.IntN(4096), respSize: int32(rng.IntN(4096))},
			testFrame{key: 0, acks: 0, pad: rng.IntN(64 << 10)},
			testFrame{key: 0, acks: -1, pad: rng.IntN(64 << 10), respSize: int32(rng.IntN(256))},
			testFrame{key: 12, pad: rng.IntN(64 << 10), respSize: int32(rng.IntN(64 << 10))},
			testFrame{key: 3, pad: rng.IntN(256), respSize: int32(rng.IntN(64 << 10))},
		)
	}
	// Produce headers beyond the read buffer: acks found by consuming the
	// header rather than peeking.
	long, longer := strings.Repeat("c", 3000), strings.Repeat("t", 30000)
	for _, acks := range []int16{0, -1} {
		plan = append(plan,
			testFrame{key: 0, acks: acks, pad: 100, respSize: 10, clientID: &long},
			testFrame{key: 0, acks: acks, pad: 100, respSize: 10, clientID: &long, txnID: &longer},
			testFrame{key: 0, acks: acks, pad: 1 << 20, respSize: 10, clientID: &longer, txnID: &longer},
		)
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	return plan
}

// TestForwardByteExact sends the plan through kproxy to the fake broker
// with several requests in flight, in every copy mode, and compares the
// SHA-256 of everything each side sent and received.
func TestForwardByteExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode copyMode
	}{
		{"pooled", copyPooled},
		{"splice", copySplice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(42, uint64(tc.mode)))
			broker := startFakeBroker(t, "127.0.0.1:0")
			p := newProxy(t, fakeConfig(broker.addr()), zap.NewNop())
			p.copyMode = tc.mode
			runProxy(t, p)

			c, err := net.Dial("tcp", p.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			plan := exactPlan(rng)
			sentHash := sha256.New()
			writeErr := make(chan error, 1)
			go func() {
				wrng := rand.New(rand.NewPCG(7, 7))
				for i, f := range plan {
					req := testRequestIDs(wrng, f.key, int32(i), f.respSize, f.acks, f.pad, f.clientID, f.txnID)
					sentHash.Write(req)
					if _, err := c.Write(req); err != nil {
						writeErr <- err
						return
					}
				}
				writeErr <- nil
			}()

			gotHash := sha256.New()
			for i, f := range plan {
				if f.key == 0 && f.acks == 0 {
					continue
				}
				resp, err := readTestFrame(c)
				if err != nil {
					t.Fatalf("response to request %d: %v", i, err)
				}
				if corr := int32(binary.BigEndian.Uint32(resp[4:])); corr != int32(i) {
					t.Fatalf("response corr %d; want %d", corr, i)
				}
				if len(resp) != 8+int(f.respSize) {
					t.Fatalf("response %d: %d bytes; want %d", i, len(resp), 8+f.respSize)
				}
				gotHash.Write(resp)
			}
			if err := <-writeErr; err != nil {
				t.Fatalf("write: %v", err)
			}
			c.Close()

			var bh brokerHashes
			select {
			case bh = <-broker.hashes:
			case <-time.After(10 * time.Second):
				t.Fatal("the fake broker's connection did not end after the client closed")
			}
			if !bytes.Equal(bh.requests, sentHash.Sum(nil)) {
				t.Errorf("requests: broker received SHA-256 %x; client sent %x", bh.requests, sentHash.Sum(nil))
			}
			if !bytes.Equal(bh.responses, gotHash.Sum(nil)) {
				t.Errorf("responses: client received SHA-256 %x; broker sent %x", gotHash.Sum(nil), bh.responses)
			}
			if st := p.Stats(); st.CorrelationMismatches != 0 || st.OversizedFrames != 0 {
				t.Errorf("stats %+v: want no mismatches or oversized frames", st)
			}
		})
	}
}
