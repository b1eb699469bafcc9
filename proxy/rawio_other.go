//go:build !linux

package proxy

import (
	"io"
	"net"
)

// readerOf returns what the pumps read c through: c itself (the raw reads
// are Linux's, rawio_linux.go).
func readerOf(c net.Conn) io.Reader { return c }

// writeConn writes b whole to c.
func writeConn(c net.Conn, b []byte) (int, error) { return c.Write(b) }

// rawConn returns nc (the raw reads and writes are Linux's).
func rawConn(nc net.Conn) net.Conn { return nc }
