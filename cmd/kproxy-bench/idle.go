package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// idleConnMemory opens n TCP connections to addr, makes each send one
// ApiVersions request (as every client does first) and read its answer, then
// leaves them idle, and returns the growth of this process's heap and
// goroutine stacks per connection. Both kproxy and kfake run in this
// process: the direct figure is kfake's own cost, and the difference is
// kproxy's.
func idleConnMemory(addr string, n int) (float64, error) {
	before := inUse()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return 0, fmt.Errorf("dial %s: %w", addr, err)
		}
		conns = append(conns, c)
		if err := apiVersions(c); err != nil {
			return 0, fmt.Errorf("api versions on %s: %w", addr, err)
		}
	}
	// Let the server side accept and settle into its idle state.
	time.Sleep(500 * time.Millisecond)
	after := inUse()
	return float64(int64(after)-int64(before)) / float64(n), nil
}

// apiVersions sends an ApiVersions v0 request on c and reads the response.
func apiVersions(c net.Conn) error {
	req := kmsg.NewPtrApiVersionsRequest()
	body := req.AppendTo(nil)
	frame := binary.BigEndian.AppendUint32(nil, uint32(2+2+4+2+len(body)))
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, 0)      // version 0
	frame = binary.BigEndian.AppendUint32(frame, 1)      // correlation id
	frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
	frame = append(frame, body...)
	if _, err := c.Write(frame); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err
	}
	_, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:])))
	return err
}

func inUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}
