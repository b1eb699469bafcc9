package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxTail is the most of a walked response's tail kproxy reads whole to
// rewrite. A real tail is the broker list: tens of bytes a broker. A larger
// one is forwarded untouched and counted as a rewrite failure.
const maxTail = 1 << 20

// walker forwards one response frame while it reads the frame's structure,
// so that the tail that names brokers (endpoints.go) can be read whole and
// rewritten while the record batches before it stream as any body does. It
// reads the frame through a buffer of its own (walkBufSize, pooled), never
// past the frame's end, and keeps what it read in out, written whenever out
// holds copyBufSize bytes or before a body is spliced: record batches of
// walkSpliceMin bytes or more are spliced from socket to socket when both
// ends are plaintext TCP, the others go through out with the structure.
//
// The structure walked is that of kmsg's own readers (kmsg reads whole
// frames only); FuzzWalk checks every walk against kmsg's parse. A frame
// whose structure does not parse is forwarded untouched (bad).
type walker struct {
	dst, src net.Conn
	mode     copyMode
	frame    *frameReader  // the frame's bytes after its prefix, from the connection
	in       *bufio.Reader // over frame
	left     int           // bytes of the frame not taken yet
	out      []byte        // read, not written yet
	written  int64
	err      error // the first read or write error: the frame is cut
	bad      bool  // the structure did not parse
	spliced  bool  // the last body passed was spliced
	// keep, when not nil, collects the frame after its size prefix with
	// its records elided, for the observers (see keepSkeleton); keepMax
	// bounds it: a longer skeleton is dropped (keep nil, kept false).
	keep    []byte
	keepMax int
}

// walkBufSize is the walker's read buffer: a Fetch response's partitions
// hold tens of bytes of structure between their batches, and reading them
// 4 KiB at a time (the connection's buffer) would cost a read and a splice
// per partition; with this buffer, and small batches copied, responses of
// many partitions walk much faster (BenchmarkWalk;
// docs/benchmarks.md, Changes to the forwarding path).
const walkBufSize = 64 << 10

// walkSpliceMin is the smallest body the walker splices rather than
// copies.
const walkSpliceMin = 64 << 10

// walkReadAhead is the most the walker reads at a time from the start of a
// frame and after each body it spliced, until a records field comes that
// it copies: whatever it reads of the next records it copies through user
// space, and reading walkBufSize at a time would copy up to that much of
// every large batch instead of splicing it. Once a records field is small
// (a response of many small partitions) it reads walkBufSize at a time
// (docs/benchmarks.md, Changes to the forwarding path).
const walkReadAhead = 4 << 10

var walkBufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, walkBufSize) }}

// frameReader reads the next n bytes of a connection's buffered reader,
// and no more; at most max at a time when max is not 0.
type frameReader struct {
	br  *bufio.Reader
	n   int
	max int
}

func (r *frameReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if r.max > 0 && len(p) > r.max {
		p = p[:r.max]
	}
	m, err := r.br.Read(p[:min(len(p), r.n)])
	r.n -= m
	return m, err
}

// newWalker starts walking a frame of size bytes after its size prefix,
// read from br (src's buffered reader). release gives its buffers back.
func newWalker(dst net.Conn, br *bufio.Reader, src net.Conn, mode copyMode, prefix [4]byte, size int32) *walker {
	w := &walker{dst: dst, src: src, mode: mode, left: int(size), frame: &frameReader{br: br, n: int(size), max: walkReadAhead}}
	w.in = walkBufs.Get().(*bufio.Reader)
	w.in.Reset(w.frame)
	w.out = append((*copyBufs.Get().(*[]byte))[:0], prefix[:]...)
	return w
}

// release gives the walker's buffers back to their pools.
func (w *walker) release() {
	w.in.Reset(nil)
	walkBufs.Put(w.in)
	out := w.out[:cap(w.out)] // the pool's buffers are used at their full length
	copyBufs.Put(&out)
}

// keepSkeleton makes the walker keep the frame's skeleton: its bytes
// after the size prefix with every record batch field replaced by an empty
// one, at most max bytes. That is the response an observer decodes
// (ShareFetch: the acquired ranges and errors around the records) without
// kproxy holding or reading a record.
func (w *walker) keepSkeleton(max int) {
	w.keep, w.keepMax = make([]byte, 0, 512), max
}

// kept appends b to the skeleton being kept, if any.
func (w *walker) kept(b []byte) {
	if w.keep == nil {
		return
	}
	if len(w.keep)+len(b) > w.keepMax {
		w.keep = nil
		return
	}
	w.keep = append(w.keep, b...)
}

// records passes a compact nullable byte field of record batches: in the
// skeleton, an empty one. Records it copies rather than splices lift the
// limit on reading ahead (walkReadAhead); none leave it as it is.
func (w *walker) records() {
	mark := len(w.keep)
	n := w.length(1)
	if w.keep != nil {
		w.keep = append(w.keep[:mark], 1) // the compact length of no bytes
	}
	keep := w.keep
	w.keep = nil
	w.spliced = false
	w.pass(n)
	w.keep = keep
	if n > 0 && !w.spliced {
		w.frame.max = 0
	}
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
	b, err := w.in.Peek(n)
	if err != nil {
		w.err = readErr(err)
		return nil
	}
	if len(w.out)+n > cap(w.out) {
		w.flush() // out stays within its pooled buffer
	}
	w.out = append(w.out, b...)
	w.kept(b)
	w.in.Discard(n)
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

// pass forwards the next n bytes as a body: with the structure when small
// or when an end is TLS, else spliced.
func (w *walker) pass(n int) {
	if w.err != nil || n == 0 {
		return
	}
	if n > w.left {
		w.bad = true
		return
	}
	w.left -= n
	w.spliced = false
	if n >= walkSpliceMin && w.keep == nil {
		if dt, ok := w.dst.(*net.TCPConn); ok && w.mode == copySplice {
			if st, ok := w.src.(*net.TCPConn); ok {
				w.splice(dt, st, n)
				w.spliced = true
				w.frame.max = walkReadAhead
				return
			}
		}
	}
	for n > 0 && w.err == nil {
		if len(w.out) == cap(w.out) {
			w.flush()
			continue
		}
		m, err := w.in.Read(w.out[len(w.out):min(cap(w.out), len(w.out)+n)])
		w.out = w.out[:len(w.out)+m]
		w.kept(w.out[len(w.out)-m:])
		n -= m
		if err != nil && n > 0 {
			w.err = readErr(err)
		}
	}
	if len(w.out) >= cap(w.out)/2 {
		w.flush()
	}
}

// splice forwards the next n bytes: those already read (in the walker's
// buffer, then the connection's) with out, the rest spliced.
func (w *walker) splice(dst, src *net.TCPConn, n int) {
	for _, r := range []*bufio.Reader{w.in, w.frame.br} {
		ahead := min(r.Buffered(), n)
		b, _ := r.Peek(ahead)
		w.out = append(w.out, b...)
		r.Discard(ahead)
		n -= ahead
		if r == w.frame.br {
			w.frame.n -= ahead
		}
	}
	w.flush()
	if w.err != nil || n == 0 {
		return
	}
	m, err := spliceBody(dst, src, n)
	w.written += m
	w.frame.n -= n
	w.err = err
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
	if _, err := io.ReadFull(w.in, b); err != nil {
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
		w.kept(tail)
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
	w.release()
	return dropped, failure
}

// walkToTail walks a response of key and version (rewriteTail) from its
// response header to its tail, which it leaves unread.
func (w *walker) walkToTail(key, version int16) {
	w.take(4) // correlation id
	w.tags()  // response header v1
	switch kmsg.Key(key) {
	case kmsg.Produce:
		w.produce(version)
	case kmsg.Fetch:
		w.fetch()
	case kmsg.ShareFetch:
		w.shareFetch(version)
	default:
		w.bad = true
	}
}

// produce walks a Produce v10+ response body up to its top-level tags, as
// kmsg's ProduceResponse reads it.
func (w *walker) produce(version int16) {
	for t := w.length(2); t > 0 && w.ok(); t-- {
		if version >= 13 {
			w.take(16) // topic id
		} else {
			w.bytes() // topic name
		}
		for p := w.length(33); p > 0 && w.ok(); p-- {
			w.take(4 + 2 + 8 + 8 + 8) // partition, error code, base offset, log append time, log start offset
			for e := w.length(6); e > 0 && w.ok(); e-- {
				w.take(4) // record error: relative offset
				w.bytes() // its message
				w.tags()
			}
			w.bytes() // error message
			w.tags()  // current leader
		}
		w.tags()
	}
	w.take(4) // throttle
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
			w.take(4)   // preferred read replica
			w.records() // its batches
			w.tags()    // diverging epoch, current leader, snapshot id
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
			w.records()
			for a := w.length(19); a > 0 && w.ok(); a-- {
				w.take(8 + 8 + 2) // acquired records: first and last offset, delivery count
				w.tags()
			}
			w.tags()
		}
		w.tags()
	}
}
