package pipeline

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestRunOrder: each exchange reaches the consumers of exchanges before
// its events reach the consumers of events; drops are told before the
// exchange that follows them, and at the end; events are batched by whole
// exchanges; an exchange that does not decode is handed on and counted.
func TestRunOrder(t *testing.T) {
	tests := []struct {
		name  string
		batch int
		steps []step
		want  []string
	}{
		{"one at a time", 0,
			[]step{{x: heartbeat(1, 0, 1)}, {x: garbage(2, 2)}, {x: heartbeat(3, 0, 3)}},
			[]string{"x1", "e1", "x2", "x3", "e3"}},
		{"drops before and at the end", 0,
			[]step{{x: heartbeat(1, 0, 1)}, {x: heartbeat(2, 0, 2), dropped: 5}, {dropped: 2}},
			[]string{"x1", "e1", "drop5", "x2", "e2", "drop2"}},
		{"batches of two", 2,
			[]step{{x: heartbeat(1, 0, 1)}, {x: heartbeat(2, 0, 2)}, {x: heartbeat(3, 0, 3)}},
			[]string{"x1", "x2", "e1,2", "x3", "e3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &trace{}
			p := New(Config{Batch: tt.batch,
				Exchanges: []ExchangeConsumer{traceExchanges{tr}}, Events: []EventConsumer{traceEvents{tr}}})
			if err := p.Run(context.Background(), &scriptedSource{steps: tt.steps}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tr.seq, tt.want) {
				t.Errorf("got %v; want %v", tr.seq, tt.want)
			}
		})
	}
}

// TestStats counts exchanges and those that did not decode.
func TestStats(t *testing.T) {
	p := New(Config{})
	xs := []*decode.Exchange{heartbeat(1, 0, 1), garbage(2, 2), garbage(3, 3)}
	if err := p.Run(context.Background(), Slice(xs)); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Stats(), (Stats{Exchanges: 3, Undecoded: 2}); got != want {
		t.Errorf("got %+v; want %+v", got, want)
	}
}

// TestWindow: only the events of exchanges completed within [Since,
// Until] go on, every exchange is decoded and handed to the consumers of
// exchanges, and reading stops past Until and its slack.
func TestWindow(t *testing.T) {
	xs := []*decode.Exchange{
		heartbeat(1, 0, 0), heartbeat(2, 0, 10), heartbeat(3, 0, 20), heartbeat(4, 0, 30),
		heartbeat(5, 0, 30+int(UntilSlack/time.Second)+1), heartbeat(6, 0, 1000),
	}
	tr := &trace{}
	p := New(Config{Since: base.Add(10 * time.Second), Until: base.Add(20 * time.Second),
		Exchanges: []ExchangeConsumer{traceExchanges{tr}}, Events: []EventConsumer{traceEvents{tr}}})
	if err := p.Run(context.Background(), Slice(xs)); err != nil {
		t.Fatal(err)
	}
	want := []string{"x1", "x2", "e2", "x3", "e3", "x4", "x5"}
	if !slices.Equal(tr.seq, want) {
		t.Errorf("got %v; want %v", tr.seq, want)
	}
	if n := p.Stats().Exchanges; n != 5 {
		t.Errorf("read %d exchanges; want 5 (stop at the first past the slack)", n)
	}
}

// TestInspect sees each exchange with its own events and decode error.
func TestInspect(t *testing.T) {
	var got []string
	p := New(Config{Batch: 32, Inspect: func(x *decode.Exchange, events []decode.Event, err error) {
		got = append(got, itoa(x.CorrelationID)+":"+itoa(int32(len(events)))+":"+map[bool]string{true: "err", false: "ok"}[err != nil])
	}})
	if err := p.Run(context.Background(), Slice([]*decode.Exchange{heartbeat(1, 0, 1), garbage(2, 2), heartbeat(3, 0, 3)})); err != nil {
		t.Fatal(err)
	}
	if want := []string{"1:1:ok", "2:0:err", "3:1:ok"}; !slices.Equal(got, want) {
		t.Errorf("got %v; want %v", got, want)
	}
}

// TestRunStops: a context done stops reading with its error, after the
// events batched are handed on; a source's error is returned.
func TestRunStops(t *testing.T) {
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := New(Config{}).Run(ctx, Slice([]*decode.Exchange{heartbeat(1, 0, 1)}))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v; want context.Canceled", err)
		}
	})
	t.Run("source", func(t *testing.T) {
		boom := errors.New("boom")
		err := New(Config{}).Run(context.Background(), failingSource{boom})
		if !errors.Is(err, boom) {
			t.Errorf("got %v; want %v", err, boom)
		}
	})
}

type failingSource struct{ err error }

func (s failingSource) Next() (*decode.Exchange, uint64, error) { return nil, 0, s.err }

// TestUndecodedWarnedOnce: a decode failure is logged once per API
// version.
func TestUndecodedWarnedOnce(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	p := New(Config{Log: zap.New(core)})
	if err := p.Run(context.Background(), Slice([]*decode.Exchange{garbage(1, 1), garbage(2, 2)})); err != nil {
		t.Fatal(err)
	}
	if n := logs.FilterMessageSnippet("did not decode").FilterLevelExact(zapcore.WarnLevel).Len(); n != 1 {
		t.Errorf("%d warnings; want 1", n)
	}
}

// TestUndecodedWarningsBounded: a client cycling through versions gets at
// most maxWarned warnings, and the versions kept stop growing; every
// failure is still counted.
func TestUndecodedWarningsBounded(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	p := New(Config{Log: zap.New(core)})
	var xs []*decode.Exchange
	for v := range 3 * maxWarned {
		x := garbage(int32(v), 1)
		x.APIVersion = int16(v)
		xs = append(xs, x)
	}
	if err := p.Run(context.Background(), Slice(xs)); err != nil {
		t.Fatal(err)
	}
	n := logs.FilterMessageSnippet("did not decode").Len()
	if n != maxWarned || len(p.warned) != maxWarned || p.Stats().Undecoded != uint64(len(xs)) {
		t.Errorf("%d warnings, %d versions kept, %d counted; want %d, %d, %d", n, len(p.warned), p.Stats().Undecoded, maxWarned, maxWarned, len(xs))
	}
}
