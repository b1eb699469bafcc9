package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// tickSource hands out its exchanges, and a tick at tickAt where its
// script holds a nil exchange before the end.
type tickSource struct {
	xs     []*decode.Exchange
	tickAt time.Time
}

func (s *tickSource) Next() (*decode.Exchange, uint64, error) {
	if len(s.xs) == 0 {
		return (&scriptedSource{}).Next()
	}
	x := s.xs[0]
	s.xs = s.xs[1:]
	return x, 0, nil
}

func (s *tickSource) Tick() time.Time { return s.tickAt }

type traceTicks struct{ t *trace }

func (c traceTicks) Advance(at time.Time) {
	c.t.seq = append(c.t.seq, "tick "+itoa(int32(at.Sub(base)/time.Second)))
}

// TestTicksInOrder: a tick of the source reaches the consumers of ticks
// after the events of the exchanges before it, batched or not, and is not
// an exchange: no consumer of exchanges sees it.
func TestTicksInOrder(t *testing.T) {
	var tr trace
	src := &tickSource{xs: []*decode.Exchange{heartbeat(1, 0, 1), heartbeat(2, 0, 2), nil, heartbeat(3, 0, 9)},
		tickAt: base.Add(5 * time.Second)}
	p := New(Config{Batch: 10, Events: []EventConsumer{traceEvents{&tr}}, Ticks: []TickConsumer{traceTicks{&tr}},
		Exchanges: []ExchangeConsumer{traceExchanges{&tr}}})
	if err := p.Run(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if got, want := join(tr.seq), "x1 | x2 | e1,2 | tick 5 | x3 | e3"; got != want {
		t.Errorf("consumers were handed %q; want %q", got, want)
	}
	if got := p.Stats().Exchanges; got != 3 {
		t.Errorf("%d exchanges counted; want 3 (a tick is none)", got)
	}
}
