package proxy

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

// The fake broker speaks only Kafka framing. Test requests carry, after
// their header, a 4-byte instruction: the size of the response body to
// generate, or dropConn. Produce requests (key 0, v3) carry a transactional
// id and acks before it, and get no response when acks is 0.
const dropConn = -2 // close this connection instead of answering

// fakeBroker is a raw TCP server answering test requests with random
// bodies. Per connection it hashes every frame it reads and writes.
type fakeBroker struct {
	ln net.Listener
	// accepted counts the connections accepted.
	accepted atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]bool
	hashes chan brokerHashes
	wg     sync.WaitGroup
}

// brokerHashes are the SHA-256 of everything one connection read (requests)
// and wrote (responses), sizes included.
type brokerHashes struct {
	requests, responses []byte
}

// startFakeBroker listens on addr ("127.0.0.1:0" for any port) and serves
// until stopped or the test ends.
func startFakeBroker(t testing.TB, addr string) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("fake broker: %v", err)
	}
	b := &fakeBroker{ln: ln, conns: make(map[net.Conn]bool), hashes: make(chan brokerHashes, 64)}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(b.stop)
	return b
}

func (b *fakeBroker) addr() string { return b.ln.Addr().String() }

// stop closes the listener and every connection, and waits for them.
func (b *fakeBroker) stop() {
	b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *fakeBroker) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.accepted.Add(1)
		b.mu.Lock()
		b.conns[c] = true
		b.mu.Unlock()
		b.wg.Add(1)
		go b.serve(c)
	}
}

// serve answers one connection until it closes, then publishes its hashes.
func (b *fakeBroker) serve(c net.Conn) {
	defer b.wg.Done()
	defer func() {
		b.mu.Lock()
		delete(b.conns, c)
		b.mu.Unlock()
		c.Close()
	}()
	reqHash, respHash := sha256.New(), sha256.New()
	defer func() {
		select {
		case b.hashes <- brokerHashes{reqHash.Sum(nil), respHash.Sum(nil)}:
		default:
		}
	}()
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	for {
		frame, err := readTestFrame(br)
		if err != nil {
			return
		}
		reqHash.Write(frame)
		body := frame[4:]
		h, err := decode.ParseRequestHeader(body)
		if err != nil {
			return
		}
		off := h.Len
		if h.APIKey == 0 {
			// v3, non-flexible: int16-length transactional id, acks.
			txn := int(int16(binary.BigEndian.Uint16(body[off:])))
			off += 2 + max(txn, 0)
			acks := int16(binary.BigEndian.Uint16(body[off:]))
			off += 2
			if acks == 0 {
				continue
			}
		}
		corr := h.CorrelationID
		want := int32(binary.BigEndian.Uint32(body[off:]))
		if want == dropConn {
			return
		}
		resp := make([]byte, 8+int(want))
		binary.BigEndian.PutUint32(resp, uint32(4+want))
		binary.BigEndian.PutUint32(resp[4:], uint32(corr))
		fillRandom(rng, resp[8:])
		respHash.Write(resp)
		if _, err := bw.Write(resp); err != nil {
			return
		}
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}

// readTestFrame reads one whole frame, size prefix included.
func readTestFrame(r io.Reader) ([]byte, error) {
	var p [4]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(p[:])
	if n > 64<<20 {
		return nil, errors.New("test frame too large")
	}
	frame := make([]byte, 4+n)
	copy(frame, p[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// testRequest builds a request frame of api key (version 0, or 3 for
// Produce) asking for a response body of respSize bytes (or a code), padded
// with pad random bytes. Its client id (and transactional id) are null.
func testRequest(rng *rand.Rand, key int16, corr, respSize int32, acks int16, pad int) []byte {
	return testRequestIDs(rng, key, corr, respSize, acks, pad, nil, nil)
}

// testRequestIDs is testRequest with a client id and, for Produce, a
// transactional id.
func testRequestIDs(rng *rand.Rand, key int16, corr, respSize int32, acks int16, pad int, clientID, txnID *string) []byte {
	b := make([]byte, 4, 64+pad)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, map[bool]uint16{true: 3, false: 0}[key == 0])
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = appendNullableString(b, clientID)
	if key == 0 {
		b = appendNullableString(b, txnID)
		b = binary.BigEndian.AppendUint16(b, uint16(acks))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(respSize))
	b = append(b, make([]byte, pad)...)
	fillRandom(rng, b[len(b)-pad:])
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func appendNullableString(b []byte, s *string) []byte {
	if s == nil {
		return binary.BigEndian.AppendUint16(b, 0xffff)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(*s)))
	return append(b, *s...)
}

func fillRandom(rng *rand.Rand, b []byte) {
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, rng.Uint64())
		b = b[8:]
	}
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// roundTrip sends one request on c and reads one response, checking its
// correlation id.
func roundTrip(t testing.TB, c net.Conn, corr int32, respSize int32) error {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(corr), 0))
	if _, err := c.Write(testRequest(rng, 1, corr, respSize, 0, 16)); err != nil {
		return err
	}
	resp, err := readTestFrame(c)
	if err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(resp[4:])); got != corr || len(resp) != 8+int(respSize) {
		t.Fatalf("response corr %d, %d bytes; want corr %d, %d bytes", got, len(resp), corr, 8+respSize)
	}
	return nil
}
