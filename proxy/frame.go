package proxy

import (
	"bufio"
	"encoding/binary"
	"errors"
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

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// frameSize reads a frame's 4-byte size prefix.
func frameSize(br *bufio.Reader) ([4]byte, int32, error) {
	var p [4]byte
	b, err := br.Peek(4) // Peek rather than ReadFull: p does not escape
	if err != nil {
		if len(b) > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return p, 0, err
	}
	copy(p[:], b)
	br.Discard(4)
	return p, int32(binary.BigEndian.Uint32(p[:])), nil
}

// copyMode chooses how streamFrame moves a body.
type copyMode int

const (
	// copySplice moves bodies with splice(2) when both ends are TCP
	// connections (plaintext on both sides), the bytes never entering
	// kproxy's memory; otherwise (TLS on either side) it copies through a
	// pooled buffer. It is the default because, with kproxy, the broker
	// and the clients in processes of their own, it takes about half the
	// CPU of the pooled copy for the same throughput, although in one
	// process on loopback (BenchmarkPump) copying is faster
	// (docs/benchmarks.md, Changes to the forwarding path). On Linux the
	// splice loop is kproxy's own (splice_linux.go); elsewhere
	// (*net.TCPConn).ReadFrom copies.
	copySplice copyMode = iota
	// copyPooled always copies through a pooled buffer. Kept so that
	// BenchmarkPump and TestForwardByteExact cover both ways.
	copyPooled
)

// streamFrame forwards one frame: its size prefix, the bytes of it already
// consumed (usually none), then its remaining n bytes, read from br, or from
// src once br is drained. The frame is never held whole: it goes through a
// pooled buffer, or from socket to socket with splice(2). It returns the
// number of bytes written to dst.
func streamFrame(dst net.Conn, br *bufio.Reader, src net.Conn, prefix [4]byte, consumed []byte, n int, mode copyMode) (int64, error) {
	if mode == copySplice {
		dtcp, dok := dst.(*net.TCPConn)
		stcp, sok := src.(*net.TCPConn)
		if dok && sok {
			return spliceFrame(dtcp, br, stcp, prefix, consumed, n)
		}
	}
	return copyFrame(dst, br, prefix, consumed, n)
}

// copyFrame moves the frame through a pooled buffer, writing each time the
// buffer is full or the bytes read so far are all there is for now, so a
// large frame flows as it arrives.
func copyFrame(dst net.Conn, br *bufio.Reader, prefix [4]byte, consumed []byte, n int) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var written int64
	k := copy(buf, prefix[:])
	if len(consumed) > len(buf)-k {
		// Only a Produce request whose header is tens of kilobytes.
		w, err := writeConn(dst, buf[:k])
		written += int64(w)
		if err == nil {
			w, err = writeConn(dst, consumed)
			written += int64(w)
		}
		if err != nil {
			return written, err
		}
		k = 0
	} else {
		k += copy(buf[k:], consumed)
	}
	m, err := copyThrough(dst, br, buf, k, n)
	return written + m, err
}

// copyThrough moves the next n bytes of br to dst through buf, whose first
// k bytes are already there to be written with them. It writes each time buf
// is full or the bytes read so far are all there is for now, so a large
// body flows as it arrives.
func copyThrough(dst net.Conn, br *bufio.Reader, buf []byte, k, n int) (int64, error) {
	var written int64
	for n > 0 {
		m, err := br.Read(buf[k:min(len(buf), k+n)])
		k += m
		n -= m
		if err != nil {
			return written, err
		}
		if k == len(buf) || n == 0 || br.Buffered() == 0 {
			w, err := writeConn(dst, buf[:k])
			written += int64(w)
			if err != nil {
				return written, err
			}
			k = 0
		}
	}
	if k > 0 {
		w, err := writeConn(dst, buf[:k])
		written += int64(w)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// spliceFrame writes the start of the frame and whatever of it br has read
// ahead, then lets the kernel move the rest with splice(2) (spliceBody).
func spliceFrame(dst *net.TCPConn, br *bufio.Reader, src *net.TCPConn, prefix [4]byte, consumed []byte, n int) (int64, error) {
	ahead := min(br.Buffered(), n)
	written, err := copyFrame(dst, br, prefix, consumed, ahead)
	if err != nil || ahead == n {
		return written, err
	}
	m, err := spliceBody(dst, src, n-ahead)
	return written + m, err
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
