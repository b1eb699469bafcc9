package pipeline

import (
	"strings"

	"github.com/kproxy-dev/kproxy/decode"
)

// maxInterned bounds the names an interner holds: past it, it starts
// afresh, so that a cluster whose jobs create topics without end does not
// grow it without end. (A real cluster names far fewer topics.)
const maxInterned = 1 << 16

// interner replaces the strings of events that consumers keep well past
// the exchange with shared copies, so that what they keep shares one copy
// of each instead of the one the decoder made per frame (a decoder copies
// all of an event's strings into one allocation: a topic name kept would
// keep them all). These are the topic names of commits and offset fetches:
// the timeline keeps each commit up to a minute, a suspect commit for as
// long as its generation, and the committed offsets by topic. Group and
// member ids need none: the timeline keeps one copy of each, in its group
// and member registries. The pipeline's goroutine owns it, as it owns
// the decoder: a plain map, no lock.
type interner struct {
	names map[string]string
}

// events interns the topic names of events' commits and offset fetches.
func (in *interner) events(events []decode.Event) {
	for i := range events {
		ev := &events[i]
		if oc := ev.OffsetCommit; oc != nil {
			for j := range oc.Topics {
				in.string(&oc.Topics[j].Topic)
			}
		}
		if of := ev.OffsetFetch; of != nil {
			for j := range of.Offsets {
				in.string(&of.Offsets[j].Topic)
			}
		}
	}
}

// string replaces *s with the interner's copy. A new name is copied
// first: *s shares its event's allocation, which the interner must not
// keep alive.
func (in *interner) string(s *string) {
	if c, ok := in.names[*s]; ok {
		*s = c
		return
	}
	if in.names == nil || len(in.names) >= maxInterned {
		in.names = map[string]string{}
	}
	c := strings.Clone(*s)
	in.names[c] = c
	*s = c
}
