// Package gcpercent holds the garbage collector target serve runs with,
// so that kproxy-journalgen -live measures serve's memory as serve runs.
package gcpercent

import (
	"os"
	"runtime/debug"
)

// Serve is serve's GOGC unless the environment sets GOGC: the heap may
// grow by half of what the last collection found live before the next
// one, rather than double (GOGC=100), for more of the collector's CPU.
// The figures, and how to reproduce them, are in docs/benchmarks.md,
// Serve over a long run.
const Serve = 50

// SetServe sets the collector's target to Serve unless GOGC is set.
// GOMEMLIMIT works as for any Go program.
func SetServe() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(Serve)
	}
}
