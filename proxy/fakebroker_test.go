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
	"testing"
)

// The fake broker speaks only Kafka framing. Test requests carry, after
// their header (key, version, correlation id, null client id: 10 bytes),
// a 4-byte instruction: the size of the response body to generate, or
// one of the codes below. Produce requests (key 0, v3) carry a null
// transactional id and acks before it, and get no response when acks is 0.
const (
	reqHeaderLen = 10
	dropConn     = -2 // close this connection instead of answering
)

// fakeBroker is a raw TCP server answering test requests with random
// bodies. Per connection it hashes every frame it reads and writes.
type fakeBroker struct {
	t  *testing.T
	ln net.Listener

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
func startFakeBroker(t *testing.T, addr string) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("fake broker: %v", err)
	}
	b := &fakeBroker{t: t, ln: ln, conns: make(map[net.Conn]bool), hashes: make(chan brokerHashes, 64)}
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
		key, corr := int16(binary.BigEndian.Uint16(body)), int32(binary.BigEndian.Uint32(body[4:]))
		off := reqHeaderLen
		if key == 0 {
			acks := int16(binary.BigEndian.Uint16(body[off+2:]))
			off += 4
			if acks == 0 {
				continue
			}
		}
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
// with pad random bytes.
func testRequest(rng *rand.Rand, key int16, corr, respSize int32, acks int16, pad int) []byte {
	n := reqHeaderLen + 4 + pad
	if key == 0 {
		n += 4
	}
	b := make([]byte, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	binary.BigEndian.PutUint16(b[4:], uint16(key))
	if key == 0 {
		binary.BigEndian.PutUint16(b[6:], 3)
	}
	binary.BigEndian.PutUint32(b[8:], uint32(corr))
	binary.BigEndian.PutUint16(b[12:], 0xffff) // null client id
	off := 4 + reqHeaderLen
	if key == 0 {
		binary.BigEndian.PutUint16(b[off:], 0xffff) // null transactional id
		binary.BigEndian.PutUint16(b[off+2:], uint16(acks))
		off += 4
	}
	binary.BigEndian.PutUint32(b[off:], uint32(respSize))
	fillRandom(rng, b[off+4:])
	return b
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
func roundTrip(t *testing.T, c net.Conn, corr int32, respSize int32) error {
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
