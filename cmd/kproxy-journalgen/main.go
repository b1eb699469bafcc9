// Command kproxy-journalgen writes a synthetic journal of a given size:
// many consumer groups joining, syncing, heartbeating, committing and now
// and then rebalancing as members come and go, plus the fetch path's
// ApiVersions and Metadata, every frame encoded by kmsg (package synth). It
// feeds the replay benchmark (kproxy replay on a journal of 1 GiB or more).
//
//	kproxy-journalgen -out /tmp/big -size 1GiB [-mix realistic|rebalance-heavy] [-groups 2000] [-members 32] [-seed 1]
//
// The default mix is realistic (synth.Realistic): heartbeats and commits
// dominate, ApiVersions and Metadata come next, and each group rebalances
// every few minutes. -mix rebalance-heavy (synth.RebalanceHeavy) makes every
// group rebalance every 15 s to 2 minutes, a stress test for the timeline.
// It prints the mix it wrote.
//
// With -live DURATION it writes no journal: it feeds that much of the
// traffic's time through serve's pipeline and live timeline at full speed,
// keeping what -retain says (serve's --timeline-retain), and prints the
// process's memory (resident, heap in use, heap live after a collection)
// every -live-every of traffic time: serve's memory after running that
// long, with the timeline entries and findings counted by kind. A week of
// the realistic mix's 2,000 groups is about 4.6 billion exchanges;
// -heartbeat 30s makes the members heartbeat and commit ten times less
// often (their session and rebalance timeouts scaled to match), which
// keeps what serve holds but makes a week about a billion exchanges;
// -groups 200 -jobs 10 makes it a hundred million. How long each takes,
// and what it showed, is in docs/benchmarks.md, Serve over a long run.
// -jobs N adds N short-lived groups that take a new group id per run, so
// that the run shows quiet groups being forgotten.
// -cpuprofile and -heapprofile (rewritten at each line, while the
// timeline is held) show where the time and memory go. -diagnosis runs
// serve's live diagnosis beside the timeline, as serve does by default.
// Each line is followed by the runtime's memory classes, the heap goal,
// the bytes allocated and the CPU time so far; the run uses serve's
// collector target (GOGC=50 unless GOGC is set). -generator-only runs
// the traffic generator alone, to measure the harness's own share;
// -generator-process runs it in a child process (this program with
// -emit), so that the lines are serve's share alone, as serve's clients
// are processes of their own. -settle D feeds the last D of traffic
// time before each line at -settle-rate exchanges a second instead of at
// full speed, and prints the memory at full speed before it too: what
// the collector marks and the free memory the runtime has yet to return
// depend on how fast the traffic comes (docs/benchmarks.md, The
// harness's speed).
//
//	kproxy-journalgen -live 48h -live-every 4h -diagnosis -heartbeat 30s -jobs 100 -generator-process -settle 5m
//	kproxy-journalgen -live 168h -live-every 4h -diagnosis -heartbeat 30s -jobs 100
//	kproxy-journalgen -live 168h -live-every 6h -groups 200 -jobs 10 -diagnosis -heartbeat 30s
//	kproxy-journalgen -live 1h -live-every 10m -diagnosis -heapprofile /tmp/heap.prof
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/timeline"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kproxy-journalgen:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "publish" { // publish.go
		return publishRun(args[1:], out)
	}
	fs := flag.NewFlagSet("kproxy-journalgen", flag.ContinueOnError)
	dir := fs.String("out", "", "journal directory to write (required)")
	sizeFlag := fs.String("size", "64MiB", "stop once this many bytes are written (KiB, MiB, GiB suffixes)")
	mixFlag := fs.String("mix", "realistic", "traffic mix: realistic or rebalance-heavy")
	groups := fs.Int("groups", 2000, "number of consumer groups")
	members := fs.Int("members", 32, "most members in a group (at least 3)")
	seed := fs.Uint64("seed", 1, "random seed: the same seed writes the same exchanges")
	segment := fs.String("segment", "64MiB", "segment size")
	liveSpan := fs.Duration("live", 0, "instead of writing a journal, feed this much traffic time through serve's pipeline at full speed (but -settle) and print its memory")
	liveTick := fs.Duration("live-every", time.Hour, "with -live, print a line every this much traffic time")
	diagnosis := fs.Bool("diagnosis", false, "with -live, run serve's live diagnosis beside the timeline (as serve does)")
	retainFlag := fs.String("retain", timeline.DefaultRetention.String(), "with -live, serve's --timeline-retain")
	generatorOnly := fs.Bool("generator-only", false, "with -live, run only the traffic generator and throw its exchanges away: the harness's own share of a run's memory")
	cpuProfile := fs.String("cpuprofile", "", "with -live, write a CPU profile of the run to this file")
	heapProfile := fs.String("heapprofile", "", "with -live, write a heap profile to this file at each line (the last one stays)")
	heartbeat := fs.Duration("heartbeat", 3*time.Second, "members' heartbeat interval (commits every second one; session timeout 15 of them); rebalances and the fetch path keep their rates in time")
	jobs := fs.Int("jobs", 0, "short-lived groups running at any time beside -groups, each run under a new group id (see synth.Options.Jobs)")
	apart := fs.Bool("generator-process", false, "with -live, generate the traffic in a child process and read it from a pipe, so that the lines measure serve's share alone")
	settle := fs.Duration("settle", 0, "with -live, feed the last this much traffic time before each line at -settle-rate, not at full speed, and print the memory at full speed before it too")
	settleRate := fs.Float64("settle-rate", 10000, "with -settle, exchanges a second of wall time (on average)")
	emit := fs.Bool("emit", false, "write the traffic's exchanges to standard output, each a journal exchange payload after its 4-byte length, until the reader goes (the child of -generator-process)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *heartbeat <= 0 || *heartbeat > synth.MaxHeartbeat || *jobs < 0 {
		return fmt.Errorf("-heartbeat must be in (0, %s] and -jobs at least 0", synth.MaxHeartbeat)
	}
	if *liveSpan > 0 || *emit {
		mix, err := synth.ParseMix(*mixFlag)
		if err != nil {
			return fmt.Errorf("-mix: %w", err)
		}
		gen := synth.Options{Seed: *seed, Groups: *groups, MaxMembers: *members, Mix: mix, Heartbeat: *heartbeat, Jobs: *jobs}
		if *emit {
			return emitRun(synth.New(gen), out)
		}
		if *settle < 0 || *settle >= *liveTick {
			return fmt.Errorf("-settle %s: want at least 0 and less than -live-every (%s)", *settle, *liveTick)
		}
		if !(*settleRate > 0) || math.IsInf(*settleRate, 1) {
			return fmt.Errorf("-settle-rate %g: want a number of exchanges a second more than 0", *settleRate)
		}
		if isSet(fs, "settle-rate") && *settle == 0 {
			return fmt.Errorf("-settle-rate is read only with -settle")
		}
		retain, err := timeline.ParseRetention(*retainFlag)
		if err != nil {
			return fmt.Errorf("-retain: %w", err)
		}
		return liveRun(gen, liveOptions{span: *liveSpan, tick: *liveTick, retain: retain, diagnosis: *diagnosis,
			generatorOnly: *generatorOnly, apart: *apart, settle: *settle, settleRate: *settleRate, cpuProfile: *cpuProfile, heapProfile: *heapProfile}, out)
	}
	if *dir == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: kproxy-journalgen -out DIR [-size 1GiB] [-mix realistic|rebalance-heavy] [-groups N] [-members N] [-seed N]")
	}
	size, err := parseSize(*sizeFlag)
	if err != nil {
		return fmt.Errorf("-size: %w", err)
	}
	segBytes, err := parseSize(*segment)
	if err != nil {
		return fmt.Errorf("-segment: %w", err)
	}
	mix, err := synth.ParseMix(*mixFlag)
	if err != nil {
		return fmt.Errorf("-mix: %w", err)
	}
	if *groups < 1 || *members < 3 {
		return fmt.Errorf("-groups must be at least 1 and -members at least 3")
	}
	start := time.Now()
	tr := synth.New(synth.Options{Seed: *seed, Groups: *groups, MaxMembers: *members, Mix: mix, Heartbeat: *heartbeat, Jobs: *jobs})
	w, err := synth.Write(tr, synth.WriteOptions{Dir: *dir, Bytes: size, SegmentBytes: segBytes})
	if err != nil {
		return err
	}
	el := time.Since(start)
	fmt.Fprintf(out, "wrote %d exchanges, %d bytes in %d segments to %s in %s (%.0f MB/s, %.0f exchanges/s)\n",
		w.Exchanges, w.Bytes, w.Segments, *dir, el.Round(time.Millisecond),
		float64(w.Bytes)/el.Seconds()/1e6, float64(w.Exchanges)/el.Seconds())
	fmt.Fprintf(out, "mix %s: %s\n", mix, describeCounts(w.Counts, w.Exchanges))
	return nil
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// describeCounts lists the share of each API, largest first.
func describeCounts(counts map[int16]uint64, total uint64) string {
	keys := make([]int16, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b int16) int {
		if counts[a] != counts[b] {
			return int(int64(counts[b]) - int64(counts[a]))
		}
		return int(a) - int(b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.1f%%", decode.APIName(k), 100*float64(counts[k])/float64(max(total, 1)))
	}
	return strings.Join(parts, ", ")
}

// parseSize reads "1GiB", "64MiB", "512KiB" or a plain byte count.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size such as 1GiB", s)
	}
	return int64(n * float64(mult)), nil
}
