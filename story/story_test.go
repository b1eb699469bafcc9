package story

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/timeline"
)

// exchanges is generated rebalancing traffic of 40 groups.
func exchanges(n int) []*decode.Exchange {
	tr := synth.New(synth.Options{Seed: 7, Groups: 40, MaxMembers: 8, Mix: synth.RebalanceHeavy})
	xs := make([]*decode.Exchange, n)
	for i := range xs {
		xs[i] = tr.Next()
	}
	return xs
}

// TestStoryAsEngines: a diagnosed story told a source gives the report and
// the findings the timeline and diagnosis engines give when wired by hand
// (as diagnose and replay --format html were), for every group and for
// one group told alone; and a story without diagnosis gives the same
// report and no findings.
func TestStoryAsEngines(t *testing.T) {
	xs := exchanges(40_000)
	for _, groups := range [][]string{nil, {"group-0007"}} {
		tcfg := timeline.Config{Groups: groups}

		diag := diagnose.New(diagnose.Config{Groups: groups}, tcfg)
		eng := diag.Timeline()
		pl := pipeline.New(pipeline.Config{Events: []pipeline.EventConsumer{diag}, Decoded: []pipeline.DecodedConsumer{diag}})
		if err := pl.Run(context.Background(), pipeline.Slice(xs)); err != nil {
			t.Fatal(err)
		}
		eng.Close(time.Time{})
		want := eng.Report()
		wantFindings := diag.Findings()
		if len(wantFindings) == 0 {
			t.Fatal("no finding: the traffic tests nothing")
		}

		st := New(Config{Timeline: tcfg, Diagnose: true})
		if _, err := Tell(context.Background(), pipeline.Slice(xs), st, Window{}); err != nil {
			t.Fatal(err)
		}
		same(t, "report", timeline.WriteJSON, st.Report(), want)
		same(t, "findings", diagnose.WriteJSON, st.Findings(), wantFindings)

		plain := New(Config{Timeline: tcfg})
		if _, err := Tell(context.Background(), pipeline.Slice(xs), plain, Window{Batch: 32}); err != nil {
			t.Fatal(err)
		}
		same(t, "report without diagnosis", timeline.WriteJSON, plain.Report(), want)
		if fs := plain.Findings(); fs != nil {
			t.Errorf("findings without diagnosis: %d; want none", len(fs))
		}
	}
}

// same fails t unless got and want write the same bytes.
func same[T any](t *testing.T, what string, write func(w io.Writer, v T) error, got, want T) {
	t.Helper()
	var g, w bytes.Buffer
	if err := write(&g, got); err != nil {
		t.Fatal(err)
	}
	if err := write(&w, want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.Bytes(), w.Bytes()) {
		t.Errorf("%s differs from the engines':\n got %.800s\nwant %.800s", what, g.String(), w.String())
	}
}

// TestReportsAfterTheEnd: once the pipeline has stopped and the story is
// settled, a reader of the snapshot has the settled reports rendered (the
// engine's, not those of the snapshot's moment), on its own goroutine.
func TestReportsAfterTheEnd(t *testing.T) {
	st := New(Config{Timeline: timeline.Config{PublishEvery: time.Hour}})
	pc := pipeline.Config{}
	st.Feed(&pc)
	if pc.Owner == nil {
		t.Fatal("Feed gives the pipeline no owner")
	}
	if err := pipeline.New(pc).Run(context.Background(), pipeline.Slice(exchanges(20_000))); err != nil {
		t.Fatal(err)
	}
	st.Timeline().Publish()
	snap := st.Timeline().Snapshot()
	st.Settle(time.Time{})
	want := st.Report()
	if len(want.Groups) == 0 || snap.Len() == 0 {
		t.Fatal("no group: the traffic tests nothing")
	}
	done := make(chan struct{})
	go func() { // another goroutine, as an admin reader
		defer close(done)
		for i := range want.Groups {
			gr := &want.Groups[i]
			b, ok, err := snap.GroupJSON(context.Background(), gr.Group)
			if err != nil || !ok {
				t.Errorf("GroupJSON(%s): %v, %v", gr.Group, ok, err)
				continue
			}
			w, _ := json.Marshal(gr)
			if !bytes.Equal(b, w) {
				t.Errorf("GroupJSON(%s) is not the settled report:\n got %.400s\nwant %.400s", gr.Group, b, w)
			}
		}
		r, _, err := snap.Report(context.Background(), timeline.Query{})
		if err != nil {
			t.Error(err)
			return
		}
		same(t, "the snapshot's report", timeline.WriteJSON, r, &timeline.Report{Groups: want.Groups})
	}()
	<-done
}
