//go:build linux

package proxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"
)

// TestSpliceFrame moves frames through spliceFrame, kproxy's own splice
// loop on Linux, from one loopback TCP connection to another: the frame
// arrives byte for byte, nothing after it is consumed, and a peer that
// closes mid-frame ends it with a truncation.
func TestSpliceFrame(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		cut  int // the feeder closes after this many bytes of the body; 0: never
	}{
		{"fits the read buffer", 1000, 0},
		{"just past the read buffer", readBufSize + 1, 0},
		{"larger than the pipe", pipeSize + 12345, 0},
		{"several pipes", 3*pipeSize + 7, 0},
		{"cut mid-body", 2 * pipeSize, pipeSize / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			feedW, feedR := tcpPair(t)
			outW, outR := tcpPair(t)
			frame := make([]byte, 4+tc.size)
			binary.BigEndian.PutUint32(frame, uint32(tc.size))
			fillRandom(rand.New(rand.NewPCG(2, uint64(tc.size))), frame[4:])
			go func() {
				if tc.cut > 0 {
					feedW.Write(frame[:4+tc.cut]) //nolint:errcheck
					feedW.Close()
					return
				}
				feedW.Write(frame)          //nolint:errcheck
				feedW.Write([]byte("NEXT")) //nolint:errcheck
			}()
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(outR)
				got <- b
			}()

			br := bufio.NewReaderSize(readerOf(feedR), readBufSize)
			prefix, size, err := frameSize(br)
			if err != nil {
				t.Fatal(err)
			}
			n, err := spliceFrame(outW, br, feedR, prefix, nil, int(size))
			outW.CloseWrite() //nolint:errcheck
			out := <-got
			if tc.cut > 0 {
				if !errors.Is(err, io.ErrUnexpectedEOF) || !truncated(err) {
					t.Fatalf("spliceFrame error %v; want io.ErrUnexpectedEOF", err)
				}
				if !bytes.Equal(out, frame[:len(out)]) || n != int64(len(out)) {
					t.Fatalf("forwarded %d bytes (%d counted), not the frame's start", len(out), n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(frame)) || !bytes.Equal(out, frame) {
				t.Fatalf("forwarded %d bytes (%d counted), want the frame's %d byte for byte", len(out), n, len(frame))
			}
			rest := make([]byte, 4)
			if _, err := io.ReadFull(br, rest); err != nil || string(rest) != "NEXT" {
				t.Fatalf("after the frame read %q, %v; want NEXT", rest, err)
			}
		})
	}
}

// TestRawReader checks that reads through rawReader end as the
// connection's own would: io.EOF, a deadline, and Close.
func TestRawReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(local, peer *net.TCPConn)
		want error
	}{
		{"peer closes", func(_, peer *net.TCPConn) { peer.Close() }, io.EOF},
		{"deadline", func(local, _ *net.TCPConn) { local.SetReadDeadline(time.Now().Add(10 * time.Millisecond)) }, os.ErrDeadlineExceeded},
		{"closed", func(local, _ *net.TCPConn) { time.AfterFunc(10*time.Millisecond, func() { local.Close() }) }, net.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local, peer := tcpPair(t)
			if _, err := peer.Write([]byte("abc")); err != nil {
				t.Fatal(err)
			}
			r := readerOf(local)
			buf := make([]byte, 16)
			n, err := io.ReadAtLeast(r, buf, 3)
			if err != nil || string(buf[:n]) != "abc" {
				t.Fatalf("read %q, %v; want abc", buf[:n], err)
			}
			tc.end(local, peer)
			if n, err := r.Read(buf); n != 0 || !errors.Is(err, tc.want) {
				t.Fatalf("read %d, %v; want 0, %v", n, err, tc.want)
			}
		})
	}
}
