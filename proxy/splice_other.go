//go:build !linux

package proxy

import (
	"io"
	"net"
)

// spliceBody moves the next n bytes of src to dst: (*net.TCPConn).ReadFrom
// with a limited source, which copies where splice(2) is not there.
func spliceBody(dst, src *net.TCPConn, n int) (int64, error) {
	m, err := dst.ReadFrom(io.LimitReader(src, int64(n)))
	if err == nil && m < int64(n) {
		err = io.ErrUnexpectedEOF
	}
	return m, err
}
