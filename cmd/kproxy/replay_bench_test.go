package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/cmd/kproxy-journalgen/synth"
	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/timeline"
)

// benchGroups is the number of groups in the benchmark journals: few
// enough that the groups' start-up (connections, first rebalance) is a
// small part of a journal of tens of MiB, as it is of a large journal.
const benchGroups = 200

// benchJournal writes a journal of the realistic mix of about size bytes
// into a temporary directory of b and returns it with its exchange count.
func benchJournal(b *testing.B, size int64) (string, uint64) {
	b.Helper()
	dir := b.TempDir()
	w, err := synth.Write(synth.New(synth.Options{Seed: 1, Groups: benchGroups}), synth.WriteOptions{Dir: dir, Bytes: size})
	if err != nil {
		b.Fatal(err)
	}
	return dir, w.Exchanges
}

// BenchmarkReplay measures replay end to end on a 32 MiB journal of the
// realistic mix (kproxy-journalgen's default), in exchanges/s, stage by
// stage: reading the journal, then decoding, then the timeline, then each
// output format as `kproxy replay` writes it (to io.Discard).
//
//	go test ./cmd/kproxy -run '^$' -bench 'BenchmarkReplay$' -benchtime 3x
func BenchmarkReplay(b *testing.B) {
	dir, n := benchJournal(b, 32<<20)
	stage := func(name string, run func() error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				if err := run(); err != nil {
					b.Fatal(err)
				}
			}
			el := time.Since(start)
			b.ReportMetric(float64(n)*float64(b.N)/el.Seconds(), "exchanges/s")
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

// replayStages reads the journal at dir, decoding each exchange when
// decoding is set and feeding a timeline (without output) when tl is set.
func replayStages(dir string, decoding, tl bool) error {
	r, err := journal.OpenReader(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	dec := decode.NewDecoder()
	eng := timeline.New(timeline.Config{})
	var last time.Time
	var x decode.Exchange
	for {
		err := r.NextInto(&x)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if !decoding {
			continue
		}
		events, _ := dec.Decode(&x)
		if tl {
			eng.Observe(&x, events)
			last = journal.CompletedAt(&x)
		}
	}
	eng.Close(last)
	return nil
}

// BenchmarkReplayMemory replays journals of 16, 32 and 64 MiB and reports
// the peak live heap (the heap marked live by the garbage collector) and
// the peak heap in use, in MB. In the streaming formats (text, jsonl) they
// should not grow with the journal; the json report holds every
// generation kept (timeline.Config.MaxGenerations per group), so it does.
//
//	go test ./cmd/kproxy -run '^$' -bench BenchmarkReplayMemory -benchtime 1x
func BenchmarkReplayMemory(b *testing.B) {
	for _, mult := range []int64{1, 2, 4} {
		b.Run(fmt.Sprintf("size=%dMiB", 16*mult), func(b *testing.B) {
			dir, _ := benchJournal(b, mult*16<<20)
			for _, format := range []string{"text", "jsonl", "json"} {
				b.Run("format="+format, func(b *testing.B) {
					var live, inUse uint64
					for b.Loop() {
						l, u, err := peakHeap(func() error {
							return replay(context.Background(), []string{dir}, replayOptions{format: format}, io.Discard, io.Discard)
						})
						if err != nil {
							b.Fatal(err)
						}
						live, inUse = max(live, l), max(inUse, u)
					}
					b.ReportMetric(float64(live)/1e6, "peak-live-MB")
					b.ReportMetric(float64(inUse)/1e6, "peak-heap-MB")
					b.ReportMetric(0, "ns/op")
				})
			}
		})
	}
}

// peakHeap runs f and returns the largest live heap and heap in use seen
// while it ran, sampled every millisecond, above what was live before it.
func peakHeap(f func() error) (live, inUse uint64, err error) {
	runtime.GC()
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	read := func() (uint64, uint64) {
		metrics.Read(samples)
		return samples[0].Value.Uint64(), samples[1].Value.Uint64()
	}
	base, baseInUse := read()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			l, u := read()
			live, inUse = max(live, l), max(inUse, u)
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
	return live - min(live, base), inUse - min(inUse, baseInUse), err
}
