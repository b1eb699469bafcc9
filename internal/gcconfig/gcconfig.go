// Package gcconfig holds the garbage collector's settings serve runs with
// (its GOGC and its soft memory limit), so that kproxy-journalgen -live
// measures serve's memory as serve runs.
package gcconfig

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// Serve is serve's GOGC unless the environment sets GOGC: the heap may
// grow by half of what the last collection found live before the next
// one, rather than double (GOGC=100), for more of the collector's CPU.
// The figures, and how to reproduce them, are in docs/benchmarks.md,
// The resident set against the live heap.
const Serve = 50

// LimitRatio is the share of its cgroup's memory limit that serve sets as
// the runtime's soft memory limit: the collector works harder as the heap
// nears the container's limit instead of the kernel killing the process
// at it. The rest is headroom for what the runtime does not count (the
// binary, thread stacks outside the heap, the kernel's socket buffers).
const LimitRatio = 0.9

// Limit is the soft memory limit in force and where it came from.
type Limit struct {
	// Bytes is the limit; math.MaxInt64 is none.
	Bytes int64
	// From says where it came from: "GOMEMLIMIT", "cgroup" or "" for none.
	From string
}

// String is the limit for a log line.
func (l Limit) String() string {
	if l.Bytes == math.MaxInt64 {
		return "none"
	}
	return fmt.Sprintf("%d MiB from %s", l.Bytes>>20, l.From)
}

// ErrAutomemlimit is the error of an AUTOMEMLIMIT that is neither "off"
// nor a share in (0, 1]: a bad setting, not a cgroup that cannot be read.
var ErrAutomemlimit = errors.New(`want "off" or a share of the cgroup's memory limit in (0, 1]`)

// SetServe sets the collector's target to Serve unless GOGC is set, and the
// soft memory limit to LimitRatio of the memory limit of the process's
// cgroup unless GOMEMLIMIT is set or the cgroup has none. AUTOMEMLIMIT
// overrides the ratio (a number in (0, 1]) or turns the cgroup's limit off
// ("off"). It returns the limit in force; an error says why the cgroup's
// limit could not be read or, wrapping ErrAutomemlimit, that AUTOMEMLIMIT
// is bad (the collector's target is set regardless); a process in no
// cgroup with a memory controller has no limit.
func SetServe() (Limit, error) {
	return setServe(memlimit.FromCgroup)
}

// setServe is SetServe with the cgroup's limit read by provider.
func setServe(provider memlimit.Provider) (Limit, error) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(Serve)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return Limit{Bytes: debug.SetMemoryLimit(-1), From: "GOMEMLIMIT"}, nil
	}
	if v, ok := os.LookupEnv("AUTOMEMLIMIT"); ok && v != "off" {
		if r, err := strconv.ParseFloat(v, 64); err != nil || !(r > 0 && r <= 1) {
			return Limit{Bytes: debug.SetMemoryLimit(-1)}, fmt.Errorf("AUTOMEMLIMIT=%q: %w", v, ErrAutomemlimit)
		}
	}
	bytes, err := memlimit.Set(memlimit.WithProvider(provider), memlimit.WithRatio(LimitRatio))
	switch {
	case errors.Is(err, memlimit.ErrNoCgroup), errors.Is(err, memlimit.ErrCgroupsNotSupported):
		return Limit{Bytes: debug.SetMemoryLimit(-1)}, nil
	case err != nil:
		return Limit{Bytes: debug.SetMemoryLimit(-1)}, fmt.Errorf("gcconfig: memory limit: %w", err)
	case bytes == math.MaxInt64:
		return Limit{Bytes: bytes}, nil
	}
	return Limit{Bytes: bytes, From: "cgroup"}, nil
}
