package timeline

import (
	"fmt"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// A group's generation never goes back while the coordinator keeps its
// state: a JoinGroup answered with a lower generation than the latest one
// formed means the group was re-created (the coordinator's data wiped, or
// __consumer_offsets lost), and its generation 1 is not a continuation of
// the old history. Folding it in would make every later commit look like a
// commit during revocation. The engine closes the old history and starts a
// new one under the same group id, each with a note saying so; reports list
// both, the old one first.

// recreated reports whether ev starts a new incarnation of the group, and
// at which generation (KIP-848: group epoch).
//
// Classic: a JoinGroup answered with a generation below the latest formed
// that is not a late answer for an older generation (one still joining, or
// one with the same leader).
//
// KIP-848: a member joining (member epoch 0) answered with an epoch below
// the group epoch seen, though it sent its join after the response that
// showed that epoch: a joining member gets the group epoch its joining
// bumped, never an older one. A join sent before that response may
// complete after it (exchanges of different connections complete in any
// order) with the older epoch it started.
func (g *group) recreated(ev *decode.Event) (bool, int32) {
	if h := ev.ConsumerGroupHeartbeat; h != nil {
		cg := g.consumer
		if cg == nil || !ev.Responded() || h.ErrorCode != 0 || h.MemberEpoch != 0 || h.AssignedEpoch <= 0 || h.AssignedEpoch >= cg.epoch {
			return false, 0
		}
		latest := g.latest()
		return latest == nil || latest.num != cg.epoch || ev.At.After(latest.joinEnd), h.AssignedEpoch
	}
	if h := ev.StreamsGroupHeartbeat; h != nil {
		return g.streams != nil && g.streams.recreatedBy(ev), h.AssignedEpoch
	}
	if ev.JoinGroup == nil || g.consumer != nil {
		return false, 0 // a classic member of a consumer group joins at its member epoch
	}
	return g.classicRecreated(ev), ev.JoinGroup.Generation
}

func (g *group) classicRecreated(ev *decode.Event) bool {
	jg := ev.JoinGroup
	latest := g.latest()
	if !ev.Responded() || jg.ErrorCode != 0 || latest == nil || jg.Generation >= latest.num {
		return false
	}
	old := g.byNum[jg.Generation]
	if old == nil {
		return true // not kept, or never seen: a late answer that old is not plausible
	}
	if old.phase == phaseJoining {
		return false
	}
	return old.leader != "" && jg.Leader != "" && old.leader != jg.Leader
}

// reincarnate closes old's history as of ev, whose generation (KIP-848:
// epoch) is to, and starts a new group under the same id, which handles ev
// and everything after it.
func (e *Engine) reincarnate(old *group, ev *decode.Event, to int32) *group {
	var from int32
	if latest := old.latest(); latest != nil {
		from = latest.num
	}
	if old.consumer != nil {
		from = max(from, old.consumer.epoch)
	}
	if old.streams != nil {
		from = max(from, old.streams.epoch)
	}
	old.close(ev.At)
	why := fmt.Sprintf("generation went back from %d to %d: the group was re-created (coordinator state lost?)", from, to)
	old.note("later incarnation", why+"; what follows is in a separate history of the same group")
	old.emit(ev.At, KindRecreated, to, "", "group re-created: "+why+"; a new history starts", nil)

	g := newGroup(e, old.id)
	g.index = len(e.groups)
	g.incarnation = old.incarnation + 1
	g.protocolType, g.coordinator = old.protocolType, old.coordinator
	g.note("earlier incarnation", why+"; the history before is listed separately")
	e.byID[old.id] = g
	e.groups = append(e.groups, g)
	old.ended = true
	e.quiet = append(e.quiet, time.Time{})
	e.quiet[old.index] = e.now.AddDate(100, 0, 0) // ended: nothing for a sweep to do
	return g
}
