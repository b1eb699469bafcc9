package timeline

import (
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
)

// feedSynth decodes the traffic o generates, for span of its time or its
// first limit exchanges (no limit when 0), and hands each exchange's
// events to add with the exchange's number.
func feedSynth(o synth.Options, span time.Duration, limit int, add func(i int, evs []decode.Event)) {
	tr := synth.New(o)
	dec := decode.NewDecoder()
	var evs []decode.Event
	var first time.Time
	for i := 0; limit == 0 || i < limit; i++ {
		x := tr.Next()
		if first.IsZero() {
			first = x.ResponseAt
		}
		if x.ResponseAt.Sub(first) > span {
			return
		}
		evs, _ = dec.DecodeAppend(evs[:0], x)
		add(i, evs)
	}
}
