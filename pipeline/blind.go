package pipeline

import (
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// BlindSource is a Source that also tells what it is blind to. After each
// call of Next, the pipeline takes what it has noted since the previous
// call, which comes before the exchange Next returned.
type BlindSource interface {
	Source
	TakeBlind() []decode.Blind
}

// BlindConsumer learns what the source is blind to, in order with the
// events: the timeline, which then notes it and infers no session timeout
// from the silence.
type BlindConsumer interface {
	Blind(group, instance string, at time.Time)
}

// noteBlind hands what src is blind to, if it tells, to the consumers,
// once the events before it have been handed on.
func (p *Pipeline) noteBlind(src Source) {
	bs, ok := src.(BlindSource)
	if !ok {
		return
	}
	bl := bs.TakeBlind()
	if len(bl) == 0 {
		return
	}
	p.flush()
	for _, b := range bl {
		for _, c := range p.cfg.Blind {
			c.Blind(b.Group, b.Instance, b.At)
		}
	}
}
