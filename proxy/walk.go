package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxTail is the most of a walked response's tail kproxy reads whole to
// rewrite. A real tail is the broker list: tens of bytes a broker. A larger
// one is forwarded untouched and counted as a rewrite failure.
const maxTail = 1 << 20

// walker forwards one response frame while it reads the frame's structure,
// so that the tail that names brokers (endpoints.go) can be read whole and
// rewritten while the record batches before it stream as any body does:
// spliced from socket to socket, or copied through a pooled buffer. It
// reads each field of the structure it needs from the connection's read
// buffer and keeps it in out to be written with the next body or the tail.
//
// The structure walked is that of kmsg's own readers (kmsg reads whole
// frames only); FuzzWalk checks every walk against kmsg's parse. A frame
// whose structure does not parse is forwarded untouched (bad).
type walker struct {
	dst, src net.Conn
	br       *bufio.Reader
	mode     copyMode
	left     int    // bytes of the frame not read yet
	out      []byte // read, not written yet
	written  int64
	err      error // the first read or write error: the frame is cut
	bad      bool  // the structure did not parse
}

// newWalker starts walking a frame of size bytes after its size prefix.
func newWalker(dst net.Conn, br *bufio.Reader, src net.Conn, mode copyMode, prefix [4]byte, size int32) *walker {
	w := &walker{dst: dst, src: src, br: br, mode: mode, left: int(size)}
	w.out = append(make([]byte, 0, 256), prefix[:]...)
	return w
}

// ok reports whether the walk goes on.
func (w *walker) ok() bool { return w.err == nil && !w.bad }

// take reads the next n bytes of structure (n is small) and returns them.
func (w *walker) take(n int) []byte {
	if !w.ok() {
		return nil
	}
	if n > w.left {
		w.bad = true
		return nil
	}
	b, err := w.br.Peek(n)
	if err != nil {
		w.err = readErr(err)
		return nil
	}
	w.out = append(w.out, b...)
	w.br.Discard(n)
	w.left -= n
	return w.out[len(w.out)-n:]
}

// uvarint reads an unsigned varint of at most five bytes, as kbin does.
func (w *walker) uvarint() uint32 {
	var x uint32
	for shift := 0; shift < 35; shift += 7 {
		b := w.take(1)
		if b == nil {
			return 0
		}
		x |= uint32(b[0]&0x7f) << shift
		if b[0] < 0x80 {
			return x
		}
	}
	w.bad = true
	return 0
}

// length reads a compact length (a count plus one; zero is null) of items
// at least min bytes each, and returns the count. As kmsg reads it, a
// length that is negative as an int32 is null.
func (w *walker) length(min int) int {
	n := int(int32(w.uvarint()) - 1)
	if n < 0 {
		return 0
	}
	if n*min > w.left {
		w.bad = true
		return 0
	}
	return n
}

// bytes passes a compact nullable byte or string field.
func (w *walker) bytes() { w.pass(w.length(1)) }

// tags passes a tagged field section.
func (w *walker) tags() {
	for n := w.uvarint(); n > 0 && w.ok(); n-- {
		w.uvarint()              // tag
		w.pass(int(w.uvarint())) // its size, then its bytes
	}
}

// pass forwards the next n bytes as a body: what the read buffer holds
// already with the structure, the rest spliced, or copied when either end
// is TLS.
func (w *walker) pass(n int) {
	if w.err != nil || n == 0 {
		return
	}
	if n > w.left {
		w.bad = true
		return
	}
	ahead := min(w.br.Buffered(), n)
	b, _ := w.br.Peek(ahead)
	w.out = append(w.out, b...)
	w.br.Discard(ahead)
	w.left -= ahead
	n -= ahead
	if n == 0 {
		if len(w.out) >= copyBufSize {
			w.flush()
		}
		return
	}
	w.flush()
	if w.err != nil {
		return
	}
	var m int64
	if dt, ok := w.dst.(*net.TCPConn); ok && w.mode == copySplice {
		if st, ok := w.src.(*net.TCPConn); ok {
			m, w.err = spliceBody(dt, st, n)
			w.written += m
			w.left -= n
			return
		}
	}
	bp := copyBufs.Get().(*[]byte)
	m, w.err = copyThrough(w.dst, w.br, *bp, 0, n)
	copyBufs.Put(bp)
	w.written += m
	w.left -= n
}

// flush writes what was read and not written yet.
func (w *walker) flush() {
	if w.err != nil || len(w.out) == 0 {
		return
	}
	m, err := writeConn(w.dst, w.out)
	w.written += int64(m)
	w.out = w.out[:0]
	w.err = err
}

// rest reads the frame's remaining bytes whole.
func (w *walker) rest() []byte {
	if !w.ok() {
		return nil
	}
	b := make([]byte, w.left)
	if _, err := io.ReadFull(w.br, b); err != nil {
		w.err = readErr(err)
		return nil
	}
	w.left = 0
	return b
}

// readErr turns the end of the stream mid-frame into io.ErrUnexpectedEOF.
func readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// walkResponse forwards the frame w walks, a response of key and version
// (rewriteTail), with its tail's broker addresses rewritten in the same
// number of bytes (rewriteEndpoints). It reports whether the endpoints
// were dropped rather than rewritten, and why the frame went untouched
// (failure): its structure or its tail does not parse, or the tail is
// larger than maxTail. The frame is forwarded whole either way, unless a
// read or write fails (w.err).
func walkResponse(w *walker, r router, key, version int16) (dropped bool, failure error) {
	w.walkToTail(key, version)
	switch {
	case w.bad:
		failure = errors.New("proxy: structure does not parse")
	case w.ok() && w.left > maxTail:
		failure = fmt.Errorf("proxy: tail of %d bytes, above the %d kproxy reads whole", w.left, maxTail)
	case w.ok():
		tail := w.rest()
		if w.err != nil {
			break
		}
		rw, drop, err := rewriteEndpoints(r, key, version, tail)
		switch {
		case errors.Is(err, errTailUnchanged):
		case err != nil:
			failure = err
		default:
			tail, dropped = rw, drop
		}
		w.out = append(w.out, tail...)
	}
	w.pass(w.left) // what was not walked, untouched
	w.flush()
	return dropped, failure
}

// walkToTail walks a response of key and version (rewriteTail) from its
// response header to its tail, which it leaves unread.
func (w *walker) walkToTail(key, version int16) {
	w.take(4) // correlation id
	w.tags()  // response header v1
	switch kmsg.Key(key) {
	case kmsg.Fetch:
		w.fetch()
	case kmsg.ShareFetch:
		w.shareFetch(version)
	default:
		w.bad = true
	}
}

// fetch walks a Fetch v16+ response body up to its top-level tags, as
// kmsg's FetchResponse reads it.
func (w *walker) fetch() {
	w.take(4 + 2 + 4) // throttle, error code, session id
	for t := w.length(18); t > 0 && w.ok(); t-- {
		w.take(16) // topic id
		for p := w.length(37); p > 0 && w.ok(); p-- {
			w.take(4 + 2 + 8 + 8 + 8) // partition, error code, high watermark, last stable and log start offsets
			for a := w.length(17); a > 0 && w.ok(); a-- {
				w.take(8 + 8) // aborted transaction: producer id, first offset
				w.tags()
			}
			w.take(4) // preferred read replica
			w.bytes() // records
			w.tags()  // diverging epoch, current leader, snapshot id
		}
		w.tags()
	}
}

// shareFetch walks a ShareFetch response body up to its NodeEndpoints, as
// kmsg's ShareFetchResponse reads it.
func (w *walker) shareFetch(version int16) {
	w.take(4 + 2) // throttle, error code
	w.bytes()     // error message
	if version >= 1 {
		w.take(4) // acquisition lock timeout
	}
	for t := w.length(18); t > 0 && w.ok(); t-- {
		w.take(16) // topic id
		for p := w.length(22); p > 0 && w.ok(); p-- {
			w.take(4 + 2) // partition, error code
			w.bytes()     // error message
			w.take(2)     // acknowledge error code
			w.bytes()     // acknowledge error message
			w.take(4 + 4) // current leader: id, epoch
			w.tags()
			w.bytes() // records
			for a := w.length(19); a > 0 && w.ok(); a-- {
				w.take(8 + 8 + 2) // acquired records: first and last offset, delivery count
				w.tags()
			}
			w.tags()
		}
		w.tags()
	}
}
