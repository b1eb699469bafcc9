package pipeline

import (
	"unique"

	"github.com/kproxy-dev/kproxy/decode"
)

// intern replaces the strings of events that consumers keep well past the
// exchange with canonical copies, so that what they keep shares one copy
// of each instead of the one the decoder made per frame (a decoder copies
// all of an event's strings into one allocation: a topic name kept would
// keep them all). These are the topic names of commits and offset fetches:
// the timeline keeps each commit up to a minute, a suspect commit for as
// long as its generation, and the committed offsets by topic. Group and
// member ids need none: the timeline keeps one copy of each, in its group
// and member registries.
func intern(events []decode.Event) {
	for i := range events {
		ev := &events[i]
		if oc := ev.OffsetCommit; oc != nil {
			for j := range oc.Topics {
				internString(&oc.Topics[j].Topic)
			}
		}
		if of := ev.OffsetFetch; of != nil {
			for j := range of.Offsets {
				internString(&of.Offsets[j].Topic)
			}
		}
	}
}

// internString replaces *s with its canonical copy. The copy lasts as
// long as some copy of it is in use and a garbage collection has not run
// since: unique keeps a value only while one of its handles is reachable,
// and the pipeline keeps none. A name in use thus has a few copies over
// time, one per collection cycle at most, not one per frame.
func internString(s *string) {
	if *s != "" {
		*s = unique.Make(*s).Value()
	}
}
