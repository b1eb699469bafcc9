package main

import (
	"fmt"
	"math"
	"runtime/metrics"
	"strings"
	"syscall"
	"time"
)

// memorySample names the runtime/metrics liveRun prints beside the
// resident set: where the heap's pages are and the goal the collector
// works to.
var memorySample = []metrics.Sample{
	{Name: "/gc/heap/goal:bytes"},
	{Name: "/memory/classes/heap/objects:bytes"},  // live and not yet swept
	{Name: "/memory/classes/heap/unused:bytes"},   // in spans in use, free slots
	{Name: "/memory/classes/heap/free:bytes"},     // free spans, still resident
	{Name: "/memory/classes/heap/released:bytes"}, // free spans given back
	{Name: "/memory/classes/heap/stacks:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/gc/heap/allocs:bytes"}, // allocated since the start
	{Name: "/gc/gogc:percent"},
	{Name: "/gc/gomemlimit:bytes"},
}

// memoryLine reads memorySample and the process's CPU time: the heap goal,
// the heap's objects, unused slots and free spans, what the runtime
// released to the OS, goroutine stacks, everything else the runtime mapped
// (total less those), the bytes allocated so far, and the process's CPU
// time so far (user+sys; the runtime's own CPU estimates count wall time
// on a busy host), then the collector's settings.
func memoryLine() string {
	metrics.Read(memorySample)
	mb := func(i int) float64 { return float64(memorySample[i].Value.Uint64()) / (1 << 20) }
	other := mb(6)
	for i := 1; i <= 5; i++ {
		other -= mb(i)
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	var b strings.Builder
	fmt.Fprintf(&b, "goal %.0f, objects %.0f, unused %.0f, free %.0f, released %.0f, stacks %.0f, other %.0f MB;",
		mb(0), mb(1), mb(2), mb(3), mb(4), mb(5), other)
	fmt.Fprintf(&b, " allocated %.1f GB, cpu %.1fs; gogc %d", float64(memorySample[7].Value.Uint64())/1e9, cpu.Seconds(),
		memorySample[8].Value.Uint64())
	if limit := memorySample[9].Value.Uint64(); limit != math.MaxInt64 {
		fmt.Fprintf(&b, ", gomemlimit %.0f MB", float64(limit)/(1<<20))
	}
	return b.String()
}

// allocated is the bytes allocated on the heap since the process started.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
