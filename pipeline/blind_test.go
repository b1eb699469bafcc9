package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// blindSource is a scriptedSource that, before the exchange of its
// blindBefore-th step, tells it is blind to group g.
type blindSource struct {
	scriptedSource
	n           int
	blindBefore int
}

func (s *blindSource) TakeBlind() []decode.Blind {
	s.n++
	if s.n == s.blindBefore {
		return []decode.Blind{{Group: "g", Instance: "zone-b", At: base}}
	}
	return nil
}

type traceBlind struct{ t *trace }

func (c traceBlind) Blind(group, instance string, _ time.Time) {
	c.t.seq = append(c.t.seq, "blind "+group+" "+instance)
}

// TestBlindInOrder: what the source is blind to reaches the consumers
// after the events of the exchanges before it, batched or not, and before
// the exchange it came with.
func TestBlindInOrder(t *testing.T) {
	var tr trace
	src := &blindSource{blindBefore: 3, scriptedSource: scriptedSource{steps: []step{
		{x: heartbeat(1, 0, 1)}, {x: heartbeat(2, 0, 2)}, {x: heartbeat(3, 0, 3)}, {x: heartbeat(4, 0, 4)},
	}}}
	p := New(Config{Batch: 10, Events: []EventConsumer{traceEvents{&tr}}, Blind: []BlindConsumer{traceBlind{&tr}}})
	if err := p.Run(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if got, want := join(tr.seq), "e1,2 | blind g zone-b | e3,4"; got != want {
		t.Errorf("consumers were handed %q; want %q", got, want)
	}
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += " | "
		}
		out += s
	}
	return out
}
