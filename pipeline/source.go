package pipeline

import (
	"io"

	"github.com/kproxy-dev/kproxy/decode"
)

// Source hands out raw exchanges in the order they completed. The proxy's
// queue (proxy.Queue) is one, a journal reader another (journal.Reader.Source).
type Source interface {
	// Next returns the next exchange, and how many exchanges the source
	// lost since the previous call (before this one). At the end it
	// returns io.EOF, with the losses not reported yet. The exchange is
	// valid until the next call, unless the source says it never reuses
	// exchanges.
	Next() (x *decode.Exchange, dropped uint64, err error)
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
