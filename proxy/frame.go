package proxy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
)

// readBufSize is the size of each connection's read buffer, on both sides.
// It holds a size prefix and a request header comfortably and keeps an
// idle connection small; bodies bypass it.
const readBufSize = 4 << 10

// copyBufSize is the size of the pooled buffers bodies are copied through.
// Connections take one only while copying a frame.
const copyBufSize = 32 << 10

// spliceMin is the smallest remainder of a frame moved with splice(2)
// rather than through a pooled buffer. See BenchmarkPump: below this size
// the extra system calls of splice cost more than the copy.
const spliceMin = 256 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// frameSize reads a frame's 4-byte size prefix.
func frameSize(br *bufio.Reader) ([4]byte, int32, error) {
	var p [4]byte
	if _, err := io.ReadFull(br, p[:]); err != nil {
		return p, 0, err
	}
	return p, int32(binary.BigEndian.Uint32(p[:])), nil
}

// readFrame reads a whole frame of size bytes after its prefix and returns
// it with the prefix in front.
func readFrame(br *bufio.Reader, prefix [4]byte, size int32) ([]byte, error) {
	buf := make([]byte, 4+int(size))
	copy(buf, prefix[:])
	if _, err := io.ReadFull(br, buf[4:]); err != nil {
		return nil, err
	}
	return buf, nil
}

// copyMode chooses how streamFrame moves a body.
type copyMode int

const (
	// copyAuto splices remainders of at least spliceMin, copies the rest.
	copyAuto copyMode = iota
	// copyPooled always copies through a pooled buffer.
	copyPooled
	// copySplice always splices when both ends are TCP connections.
	copySplice
)

// streamFrame forwards one frame whose head (its size prefix, and any bytes
// of it already consumed) is given and whose remaining n bytes are still to
// be read from br, or from src once br is drained. The frame is never held
// whole: it goes through a pooled buffer, or from socket to socket with
// splice(2). It returns the number of bytes written to dst.
func streamFrame(dst net.Conn, br *bufio.Reader, src net.Conn, head []byte, n int, mode copyMode) (int64, error) {
	dtcp, dok := dst.(*net.TCPConn)
	stcp, sok := src.(*net.TCPConn)
	splice := dok && sok && (mode == copySplice || mode == copyAuto && n-br.Buffered() >= spliceMin)
	if splice {
		return spliceFrame(dtcp, br, stcp, head, n)
	}
	return copyFrame(dst, br, head, n)
}

// copyFrame moves the frame through a pooled buffer, writing each time the
// buffer is full or the bytes read so far are all there is for now, so a
// large frame flows as it arrives.
func copyFrame(dst io.Writer, br *bufio.Reader, head []byte, n int) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var written int64
	k := 0
	if len(head) > len(buf) {
		w, err := dst.Write(head)
		written += int64(w)
		if err != nil {
			return written, err
		}
	} else {
		k = copy(buf, head)
	}
	for n > 0 {
		m, err := br.Read(buf[k:min(len(buf), k+n)])
		k += m
		n -= m
		if err != nil {
			return written, err
		}
		if k == len(buf) || n == 0 || br.Buffered() == 0 {
			w, err := dst.Write(buf[:k])
			written += int64(w)
			if err != nil {
				return written, err
			}
			k = 0
		}
	}
	if k > 0 {
		w, err := dst.Write(buf[:k])
		written += int64(w)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// spliceFrame writes the head and whatever of the frame br has read ahead in
// one writev, then lets the kernel move the rest: (*net.TCPConn).ReadFrom
// with a limited *net.TCPConn source uses splice(2) on Linux.
func spliceFrame(dst *net.TCPConn, br *bufio.Reader, src *net.TCPConn, head []byte, n int) (int64, error) {
	ahead := min(br.Buffered(), n)
	buffered, _ := br.Peek(ahead)
	bufs := net.Buffers{head, buffered}
	written, err := bufs.WriteTo(dst)
	if _, derr := br.Discard(ahead); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return written, err
	}
	n -= ahead
	if n == 0 {
		return written, nil
	}
	m, err := dst.ReadFrom(io.LimitReader(src, int64(n)))
	written += m
	if err == nil && m < int64(n) {
		err = io.ErrUnexpectedEOF
	}
	return written, err
}

// isTLSHello reports whether a frame's first four bytes are the start of a
// TLS handshake record (content type 22, version 3.x) rather than a size.
func isTLSHello(p [4]byte) bool {
	return p[0] == 0x16 && p[1] == 0x03 && p[2] <= 0x04
}

// describePrefix says what a bad size prefix looks like, for the log: plain
// text (an HTTP request, say) is shown as such.
func describePrefix(p [4]byte) string {
	for _, c := range p {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("% x", p[:])
		}
	}
	return fmt.Sprintf("%q (text, not Kafka)", string(p[:]))
}
