package pipeline

import (
	"unique"

	"github.com/kproxy-dev/kproxy/decode"
)

// internTopics replaces the topic names of events' commits and offset
// fetches, which consumers keep well past the exchange, with the canonical
// copies of the unique package, so that what they keep shares one copy of
// each instead of the one the decoder made per frame (a decoder copies all
// of an event's strings into one allocation: a topic name kept would keep
// them all; unique.Make copies a string it does not hold yet). The
// timeline keeps each commit up to a minute, a suspect commit for as long
// as its generation, and the committed offsets by topic. Group and member
// ids need none: the timeline keeps one copy of each, in its group and
// member registries. unique forgets a name nobody holds a handle of at a
// garbage collection, so that a cluster whose jobs create topics without
// end does not grow it without end; a name made again after that is a
// second copy, shared from then on.
func internTopics(events []decode.Event) {
	for i := range events {
		ev := &events[i]
		if oc := ev.OffsetCommit; oc != nil {
			for j := range oc.Topics {
				oc.Topics[j].Topic = unique.Make(oc.Topics[j].Topic).Value()
			}
		}
		if of := ev.OffsetFetch; of != nil {
			for j := range of.Offsets {
				of.Offsets[j].Topic = unique.Make(of.Offsets[j].Topic).Value()
			}
		}
	}
}
