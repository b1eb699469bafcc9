package journal

import "github.com/kproxy-dev/kproxy/decode"

// Source hands out a Reader's exchanges as a source of the pipeline
// (pipeline.Source). It reuses one exchange: what a consumer keeps of it,
// it must copy. Exchanges the journal's writer dropped are in the
// Reader's Stats, not reported as losses: a replay says so itself.
type Source struct {
	r *Reader
	x decode.Exchange
}

// Source returns a Source reading r.
func (r *Reader) Source() *Source { return &Source{r: r} }

// Next returns the next exchange (valid until the next call), no count of
// losses, and io.EOF at the end.
func (s *Source) Next() (*decode.Exchange, uint64, error) {
	if err := s.r.NextInto(&s.x); err != nil {
		return nil, 0, err
	}
	return &s.x, 0, nil
}
