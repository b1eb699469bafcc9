package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestStreamingTimelineSameEntries replays synthetic journals of both
// mixes (many generations per group) through a timeline that keeps
// everything and one keeping StreamRetention, as replay uses for text and
// jsonl: the entries are the same.
func TestStreamingTimelineSameEntries(t *testing.T) {
	for _, mix := range []synth.Mix{synth.Realistic, synth.RebalanceHeavy} {
		t.Run(mix.String(), func(t *testing.T) {
			dir := t.TempDir()
			_, err := synth.Write(synth.New(synth.Options{Seed: 3, Groups: 3, MaxMembers: 16, Mix: mix}),
				synth.WriteOptions{Dir: dir, Bytes: 4 << 20})
			if err != nil {
				t.Fatal(err)
			}
			full, gens := timelineText(t, dir, timeline.Retention{})
			streamed, _ := timelineText(t, dir, timeline.StreamRetention)
			if gens <= timeline.StreamingGenerations {
				t.Fatalf("the journal has at most %d generations per group; want more than %d to test streaming", gens, timeline.StreamingGenerations)
			}
			if streamed != full {
				t.Fatalf("streaming entries differ: %s", firstDifference(streamed, full))
			}
		})
	}
}

// timelineText runs the journal at dir through decode and a timeline
// keeping what keep says and returns its entries as text, and the most
// generations a group of the report has.
func timelineText(t *testing.T, dir string, keep timeline.Retention) (string, int) {
	t.Helper()
	var b strings.Builder
	eng := timeline.NewRetaining(timeline.Config{OnEntry: func(e timeline.Entry) { timeline.WriteEntryText(&b, e) }}, keep)
	r, err := journal.OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pl := pipeline.New(pipeline.Config{Events: []pipeline.EventConsumer{eng}})
	if err := pl.Run(context.Background(), r.Source()); err != nil {
		t.Fatal(err)
	}
	if n := pl.Stats().Undecoded; n > 0 {
		t.Fatalf("%d exchanges did not decode", n)
	}
	eng.Close(time.Time{})
	most := 0
	for _, g := range eng.Report().Groups {
		most = max(most, len(g.Generations))
	}
	return b.String(), most
}

// eachExchange reads the journal at dir and calls f with each exchange in
// turn, stopping at the first error; f must not keep x past its return.
func eachExchange(dir string, f func(x *decode.Exchange) error) error {
	r, err := journal.OpenReader(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	var x decode.Exchange
	for {
		err := r.NextInto(&x)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f(&x); err != nil {
			return err
		}
	}
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, a, b)
		}
	}
	return ""
}
