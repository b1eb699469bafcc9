package pipeline

import (
	"io"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// Source hands out raw exchanges in the order they completed. The proxy's
// queue (proxy.Queue) is one, a journal reader another (journal.Reader.Source).
type Source interface {
	// Next returns the next exchange, and how many exchanges the source
	// lost since the previous call (before this one). At the end it
	// returns io.EOF, with the losses not reported yet. The exchange is
	// valid until the next call, unless the source says it never reuses
	// exchanges. A TickSource also returns a nil exchange and a nil error:
	// a tick.
	Next() (x *decode.Exchange, dropped uint64, err error)
}

// TickSource is a Source that ticks: when it has had nothing to hand out
// for a while, Next returns a nil exchange and a nil error, and Tick then
// says the time before which every exchange has been handed out. The
// proxy's queue is one (idle for a second), the fleet's merged stream
// another (each read that releases nothing). Ticks come in order with the
// exchanges, so a consumer that moves its clock on them never overtakes an
// exchange still queued, however far behind the pipeline runs.
type TickSource interface {
	Source
	Tick() time.Time
}

// TickConsumer learns, in order with the events, that the source had
// nothing more before at: the diagnosis, which then warns of the silences
// due by then rather than at the next exchange.
type TickConsumer interface {
	Advance(at time.Time)
}

// sliceSource hands out the exchanges of a slice.
type sliceSource struct {
	xs []*decode.Exchange
}

// Slice is a Source that hands out xs in order, as they are: for tests and
// tools that hold exchanges in memory.
func Slice(xs []*decode.Exchange) Source { return &sliceSource{xs: xs} }

func (s *sliceSource) Next() (*decode.Exchange, uint64, error) {
	if len(s.xs) == 0 {
		return nil, 0, io.EOF
	}
	x := s.xs[0]
	s.xs = s.xs[1:]
	return x, 0, nil
}
