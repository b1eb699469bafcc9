package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/internal/gcconfig"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/story"
	"github.com/kproxy-dev/kproxy/timeline"
)

// liveRun feeds span of the traffic's time, at full speed, through the
// pipeline as serve builds it (a JSON log at info, thrown away; the live
// timeline keeping what retain says, publishing snapshots), and prints,
// every tick of traffic time, the exchanges and generations so far, the
// groups kept, the process's resident memory and heap in use, the heap
// still live after a collection (what serve would hold after running that
// long; publishing is stopped for the measure, so that no publish in
// progress counts), and the groups asleep (ended, dormant) with what they
// keep, compressed (their reports and views: no snapshot holds a report,
// which is rendered when a reader asks for it).
//
// With o.diagnosis, the diagnosis runs beside the timeline as serve runs
// it (diagnose.Live, forgetting what the retention forgets; each finding
// logged at warn, a block after each storm). With o.apart, gen's traffic
// is generated in a child process (apart.go). With o.settle, the last
// o.settle of traffic time before each line is fed at o.settleRate
// exchanges a second, and the line also says what the memory was at full
// speed before it and what the stretch fed.
func liveRun(gen synth.Options, o liveOptions, out io.Writer) error {
	// The collector's settings serve runs with; the memory line says the limit.
	if _, err := gcconfig.SetServe(); err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	log := zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zapcore.InfoLevel))
	var gens uint64
	entries, findings := map[timeline.Kind]uint64{}, map[diagnose.Kind]uint64{}
	// Snapshots are published as serve publishes them, on the pipeline's
	// goroutine, so none is in progress while the memory is measured.
	tcfg := timeline.Config{PublishEvery: 200 * time.Millisecond, OnEntry: func(e timeline.Entry) {
		if e.Kind == timeline.KindStable {
			gens++
		}
		entries[e.Kind]++
		log.Info(e.Text, e.ZapFields()...)
	}}
	st := story.New(story.Config{Timeline: tcfg, Retain: o.retain,
		Diagnose: o.diagnosis, Diagnosis: diagnose.Config{Forget: o.retain.MaxAge},
		OnFinding: func(f diagnose.Finding) {
			findings[f.Kind]++
			log.Warn(f.Explanation, zap.String("group", f.Group), zap.String("kind", string(f.Kind)), zap.Any("evidence", f.Evidence))
		},
		AfterStorm: func(group string, fs []diagnose.Finding) {
			log.Info("findings after the storm", zap.String("group", group), zap.Int("findings", len(fs)))
		}})
	live := st.Timeline()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &spanSource{}
	if o.apart {
		var err error
		if src.batches, src.failed, err = generateApart(ctx, gen); err != nil {
			return err
		}
	} else {
		src.batches = generate(ctx, synth.New(gen))
	}
	pc := pipeline.Config{Log: log}
	st.Feed(&pc)
	pl := pipeline.New(pc)
	start := time.Now()
	fmt.Fprintf(out, "%10s %12s %12s %8s %10s %10s %10s %8s %9s %8s\n", "traffic", "exchanges", "generations", "groups",
		"rss_mb", "heap_mb", "live_mb", "asleep", "asleep_mb", "wall")
	feed := func(upTo time.Duration) error {
		src.upTo = upTo
		if o.generatorOnly {
			return src.drain()
		}
		return pl.Run(context.Background(), src)
	}
	for at := o.tick; at <= o.span; at += o.tick {
		fast, settled := "", ""
		if o.settle > 0 {
			if err := feed(at - o.settle); err != nil {
				return err
			}
			live.Publish() // as at the line
			fast = fmt.Sprintf("rss %.0f MB, %s", float64(rss())/(1<<20), memoryLine())
			handed, allocs, from := src.handed, allocated(), time.Now()
			src.pace(o.settleRate)
			if err := feed(at); err != nil {
				return err
			}
			src.pace(0)
			el := time.Since(from).Seconds()
			settled = fmt.Sprintf("%d exchanges in %.0f s, %.0f a second, %.0f MB allocated a second",
				src.handed-handed, el, float64(src.handed-handed)/el, float64(allocated()-allocs)/el/(1<<20))
		} else if err := feed(at); err != nil {
			return err
		}
		live.Publish() // the snapshot as of the tick, however short it was

		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		inuse, resident, mem := ms.HeapInuse, rss(), memoryLine()
		runtime.GC() // what is left is what the run holds
		runtime.ReadMemStats(&ms)
		asleep, kept := live.Asleep()
		fmt.Fprintf(out, "%10s %12d %12d %8d %10.0f %10.0f %10.0f %8d %9.1f %8s\n", at, src.handed, gens,
			live.Snapshot().Len(), float64(resident)/(1<<20), float64(inuse)/(1<<20), float64(ms.HeapAlloc)/(1<<20),
			asleep, float64(kept)/(1<<20), time.Since(start).Round(time.Second))
		if fast != "" {
			fmt.Fprintf(out, "%10s before the last %s, at full speed: %s\n", "", o.settle, fast)
			fmt.Fprintf(out, "%10s the last %s: %s\n", "", o.settle, settled)
		}
		fmt.Fprintf(out, "%10s memory: %s\n", "", mem)
		fmt.Fprintf(out, "%10s entries: %s\n", "", countsLine(entries))
		if o.diagnosis {
			fmt.Fprintf(out, "%10s findings: %s\n", "", countsLine(findings))
		}
		if o.heapProfile != "" { // rewritten at each tick: a run stopped early leaves its latest
			if err := writeHeapProfile(o.heapProfile); err != nil {
				return err
			}
		}
	}
	return nil
}

// countsLine is counts as "kind n, ...", by kind, or "none".
func countsLine[K ~string](counts map[K]uint64) string {
	keys := slices.Sorted(maps.Keys(counts))
	if len(keys) == 0 {
		return "none"
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// liveOptions are liveRun's settings, from the -live flags.
type liveOptions struct {
	span, tick    time.Duration // traffic time to run, and between lines
	retain        timeline.Retention
	diagnosis     bool // run serve's live diagnosis beside the timeline
	generatorOnly bool // throw the exchanges away: measure the generator alone
	apart         bool // generate the traffic in a child process (apart.go)
	// settle is the traffic time before each line fed at settleRate
	// exchanges per second of wall time, not at full speed; 0 none.
	settle                  time.Duration
	settleRate              float64
	cpuProfile, heapProfile string // files to write profiles to, or ""
}

// writeHeapProfile writes the heap's live objects, after a collection, to
// path; called at each tick, while the run's timeline is in use.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}

// generate makes tr's exchanges on a goroutine of its own, in batches,
// until ctx is done: the pipeline and the traffic each have a core.
func generate(ctx context.Context, tr *synth.Traffic) <-chan []*decode.Exchange {
	ch := make(chan []*decode.Exchange, 4) // a few thousand exchanges, under a megabyte
	go func() {
		for {
			b := make([]*decode.Exchange, 256)
			for i := range b {
				b[i] = tr.Next()
			}
			select {
			case ch <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// spanSource hands out the traffic's exchanges completed up to upTo
// after the first one, then io.EOF; the next Run goes on from there.
type spanSource struct {
	batches <-chan []*decode.Exchange // from generate or generateApart
	failed  *error                    // why generateApart closed batches
	batch   []*decode.Exchange        // what is left of the latest batch
	upTo    time.Duration
	first   time.Time        // the first exchange's completion time
	pending *decode.Exchange // read past upTo, handed out next time
	handed  uint64           // exchanges handed out

	rate    float64   // exchanges handed out per second of wall time since pacedAt; 0 as fast as they come
	paced   float64   // exchanges handed out since pacedAt
	pacedAt time.Time // when pace was called

	now   func() time.Time    // the wall clock; time.Now when nil
	sleep func(time.Duration) // time.Sleep when nil
}

// pace hands the exchanges out at rate a second of wall time from now on,
// on average: after a stall (the pipeline slower for a while), those
// behind their time go as fast as they come, as a proxy's queue drains.
// 0: all as fast as they come.
func (s *spanSource) pace(rate float64) {
	if s.now == nil {
		s.now, s.sleep = time.Now, time.Sleep
	}
	s.rate, s.paced, s.pacedAt = rate, 0, s.now()
}

func (s *spanSource) Next() (*decode.Exchange, uint64, error) {
	x := s.pending
	if x == nil {
		if len(s.batch) == 0 {
			b, ok := <-s.batches
			if !ok {
				return nil, 0, *s.failed
			}
			s.batch = b
		}
		x, s.batch = s.batch[0], s.batch[1:]
	}
	if s.first.IsZero() {
		s.first = x.ResponseAt
	}
	if x.ResponseAt.Sub(s.first) > s.upTo {
		s.pending = x
		return nil, 0, io.EOF
	}
	s.pending = nil
	s.handed++
	if s.rate > 0 {
		s.paced++
		if ahead := time.Duration(s.paced/s.rate*float64(time.Second)) - s.now().Sub(s.pacedAt); ahead > 10*time.Millisecond {
			s.sleep(ahead)
		}
	}
	return x, 0, nil
}

// drain takes the exchanges up to s.upTo and throws them away.
func (s *spanSource) drain() error {
	for {
		if _, _, err := s.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// rss is the process's resident set size in bytes (Linux), 0 when unknown.
func rss() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
