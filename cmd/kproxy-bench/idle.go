package main

import (
	"fmt"
	"net"
	"runtime"
	"time"
)

// idleConnMemory opens n TCP connections to addr that send nothing and
// returns the growth of this process's heap and goroutine stacks per
// connection. Both kproxy and kfake run in this process: the direct figure
// is kfake's own cost, and the difference is kproxy's.
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
	}
	// Let the server side accept and settle into its idle state.
	time.Sleep(500 * time.Millisecond)
	after := inUse()
	return float64(after-before) / float64(n), nil
}

func inUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}
