//go:build linux

package proxy

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawReader reads a TCP connection with raw read(2) calls, waiting for it
// to be readable through the poller, so that reading the start of a frame
// does not wake the runtime's monitor thread (splice_linux.go says why).
// Read deadlines and Close apply as to the connection's own Read.
type rawReader struct{ rc syscall.RawConn }

// readerOf returns what the pumps read c through: a rawReader for a TCP
// connection, c itself otherwise (TLS).
func readerOf(c net.Conn) io.Reader {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return rawReader{rc: rc}
}

func (r rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(m), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// writeConn writes b whole to c: with raw system calls when c is a TCP
// connection (as rawReader reads), with c.Write otherwise.
func writeConn(c net.Conn, b []byte) (int, error) {
	if tc, ok := c.(*net.TCPConn); ok {
		return writeRaw(tc, b)
	}
	return c.Write(b)
}

// rawIOConn is a TCP connection whose Read and Write are rawReader's and
// writeConn's: what crypto/tls reads and writes through, so that TLS
// records do not wake the runtime's monitor thread either.
type rawIOConn struct {
	net.Conn
	r io.Reader
}

func (c *rawIOConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *rawIOConn) Write(b []byte) (int, error) { return writeConn(c.Conn, b) }

// rawConn returns nc with raw reads and writes when it is a TCP
// connection, nc itself otherwise.
func rawConn(nc net.Conn) net.Conn {
	if _, ok := nc.(*net.TCPConn); !ok {
		return nc
	}
	return &rawIOConn{Conn: nc, r: readerOf(nc)}
}
