package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/timeline"
)

// benchGroups is the number of groups in the benchmark journals: few
// enough that the groups' start-up (connections, first rebalance) is a
// small part of a journal of tens of MiB, as it is of a large journal.
const benchGroups = 200

// benchJournal writes a journal of the realistic mix of about size bytes
// for that many groups into a temporary directory of b and returns it with
// its exchange count.
func benchJournal(b *testing.B, size int64, groups int) (string, uint64) {
	b.Helper()
	dir := b.TempDir()
	w, err := synth.Write(synth.New(synth.Options{Seed: 1, Groups: groups}), synth.WriteOptions{Dir: dir, Bytes: size})
	if err != nil {
		b.Fatal(err)
	}
	return dir, w.Exchanges
}

// BenchmarkReplay measures replay end to end on a 32 MiB journal of the
// realistic mix (kproxy-journalgen's default), stage by stage: reading the
// journal, then decoding, then the timeline, then each output format as
// `kproxy replay` writes it (to io.Discard). It reports exchanges per
// second of wall time, and per second of CPU time used by the process
// (garbage collection included), which other load on a shared machine
// disturbs less. With GOMAXPROCS=1 both are for one core.
//
//	GOMAXPROCS=1 go test ./cmd/kproxy -run '^$' -bench 'BenchmarkReplay$' -benchtime 5x
func BenchmarkReplay(b *testing.B) {
	dir, n := benchJournal(b, 32<<20, benchGroups)
	stage := func(name string, run func() error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start, cpu := time.Now(), cpuTime()
			for b.Loop() {
				if err := run(); err != nil {
					b.Fatal(err)
				}
			}
			el, used := time.Since(start), cpuTime()-cpu
			b.ReportMetric(float64(n)*float64(b.N)/el.Seconds(), "exchanges/s")
			b.ReportMetric(float64(n)*float64(b.N)/used.Seconds(), "exchanges/cpu-s")
		})
	}
	stage("read", func() error { return replayStages(dir, false, false) })
	stage("decode", func() error { return replayStages(dir, true, false) })
	stage("timeline", func() error { return replayStages(dir, true, true) })
	for _, format := range []string{"text", "jsonl", "json"} {
		stage("format="+format, func() error {
			return replay(context.Background(), []string{dir}, replayOptions{format: format}, io.Discard, io.Discard)
		})
	}
}

// BenchmarkReplayFindings measures what the findings block after each
// storm costs `kproxy replay --format text`: each round replays the same
// 32 MiB journal of the realistic mix with the blocks (the diagnosis runs
// beside a timeline that keeps serve's retention) and without them
// (--findings=false: a streaming timeline alone), alternately, and
// reports the exchanges per second of each and their ratio (findings-ratio:
// with / without; 1 means free).
//
//	GOMAXPROCS=1 go test ./cmd/kproxy -run '^$' -bench BenchmarkReplayFindings -benchtime 5x
func BenchmarkReplayFindings(b *testing.B) {
	dir, n := benchJournal(b, 32<<20, benchGroups)
	var on, off time.Duration
	run := func(noFindings bool) time.Duration {
		start := time.Now()
		o := replayOptions{format: "text", noFindings: noFindings}
		o.stormRebalances, o.stormWindow = config.DefaultStormRebalances, config.DefaultStormWindow
		if err := replay(context.Background(), []string{dir}, o, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 { // alternate which goes first
			on += run(false)
			off += run(true)
		} else {
			off += run(true)
			on += run(false)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/on.Seconds(), "findings-exchanges/s")
	b.ReportMetric(float64(n)*float64(b.N)/off.Seconds(), "plain-exchanges/s")
	b.ReportMetric(off.Seconds()/on.Seconds(), "findings-ratio")
	b.ReportMetric(0, "ns/op")
}

// replayStages reads the journal at dir, through the pipeline when
// decoding is set, into a timeline (without output) when tl is set.
func replayStages(dir string, decoding, tl bool) error {
	if !decoding {
		return eachExchange(dir, func(*decode.Exchange) error { return nil })
	}
	r, err := journal.OpenReader(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	var cfg pipeline.Config
	eng := timeline.New(timeline.Config{})
	if tl {
		cfg.Events = []pipeline.EventConsumer{eng}
	}
	err = pipeline.New(cfg).Run(context.Background(), r.Source())
	eng.Close(time.Time{})
	return err
}

// BenchmarkReplayMemory replays journals of 32, 64 and 128 MiB of 50 groups
// (about 30, 60 and 120 minutes of their traffic: past the first half
// hour, when groups start, reach the generations a streaming timeline
// keeps, and bounded caches fill) and reports, in MB:
//
//   - peak-heap-MB: the most heap in use during `kproxy replay`, sampled
//     every millisecond (garbage not yet collected included);
//   - retained-MB: what reader, decoder and timeline (configured as replay
//     configures them for the format) hold at the end of the input, after
//     a garbage collection.
//
// In the streaming formats (text, jsonl) neither should grow with the
// journal; the json report holds every generation kept
// (timeline.Config.MaxGenerations per group), so it does.
//
//	go test ./cmd/kproxy -run '^$' -bench BenchmarkReplayMemory -benchtime 1x
func BenchmarkReplayMemory(b *testing.B) {
	for _, mult := range []int64{1, 2, 4} {
		b.Run(fmt.Sprintf("size=%dMiB", 32*mult), func(b *testing.B) {
			dir, _ := benchJournal(b, mult*32<<20, 50)
			for _, format := range []string{"text", "jsonl", "json"} {
				b.Run("format="+format, func(b *testing.B) {
					var peak, kept uint64
					for b.Loop() {
						p, err := peakHeap(func() error {
							return replay(context.Background(), []string{dir}, replayOptions{format: format}, io.Discard, io.Discard)
						})
						if err != nil {
							b.Fatal(err)
						}
						r := timeline.StreamRetention
						if format == "json" {
							r = timeline.Retention{}
						}
						k, err := retained(dir, r)
						if err != nil {
							b.Fatal(err)
						}
						peak, kept = max(peak, p), max(kept, k)
					}
					b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
					b.ReportMetric(float64(kept)/1e6, "retained-MB")
					b.ReportMetric(0, "ns/op")
				})
			}
		})
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapLive is the heap marked live by the last garbage collection.
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// retained reads the journal at dir through decode and a timeline keeping
// what r says (entries rendered to io.Discard) and returns the heap they
// hold at the end, above what was live before.
func retained(dir string, r timeline.Retention) (uint64, error) {
	runtime.GC()
	base := heapLive()
	jr, err := journal.OpenReader(dir)
	if err != nil {
		return 0, err
	}
	defer jr.Close()
	eng := timeline.NewRetaining(timeline.Config{OnEntry: func(e timeline.Entry) { timeline.WriteEntryText(io.Discard, e) }}, r)
	pl := pipeline.New(pipeline.Config{Events: []pipeline.EventConsumer{eng}})
	if err := pl.Run(context.Background(), jr.Source()); err != nil {
		return 0, err
	}
	runtime.GC()
	live := heapLive()
	runtime.KeepAlive(eng)
	runtime.KeepAlive(pl)
	runtime.KeepAlive(jr)
	return live - min(live, base), nil
}

// peakHeap runs f and returns the most heap in use seen while it ran,
// sampled every millisecond, above what was in use before it.
func peakHeap(f func() error) (peak uint64, err error) {
	runtime.GC()
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(samples)
		return samples[0].Value.Uint64()
	}
	base := read()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	err = f()
	close(done)
	wg.Wait()
	return peak - min(peak, base), err
}
