package pipeline

import (
	"io"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/journal"
)

// Source hands out raw exchanges in the order they completed. The proxy's
// queue (proxy.Queue) is one, a journal reader another (Journal).
type Source interface {
	// Next returns the next exchange, and how many exchanges the source
	// lost since the previous call (before this one). At the end it
	// returns io.EOF, with the losses not reported yet. The exchange is
	// valid until the next call, unless the source says it never reuses
	// exchanges.
	Next() (x *decode.Exchange, dropped uint64, err error)
}

// journalSource reads a journal into one exchange, again and again.
type journalSource struct {
	r *journal.Reader
	x decode.Exchange
}

// Journal is a Source that reads r. It reuses one exchange: what a
// consumer keeps of it, it must copy. Exchanges the journal's writer
// dropped are in r.Stats(), not reported as losses: a replay says so
// itself.
func Journal(r *journal.Reader) Source { return &journalSource{r: r} }

func (s *journalSource) Next() (*decode.Exchange, uint64, error) {
	if err := s.r.NextInto(&s.x); err != nil {
		return nil, 0, err
	}
	return &s.x, 0, nil
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
