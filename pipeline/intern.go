package pipeline

import (
	"unique"

	"github.com/kproxy-dev/kproxy/decode"
)

// intern replaces the strings of events that consumers keep well past the
// exchange with the canonical copies of the unique package, so that what
// they keep shares one copy of each instead of the one the decoder made per
// frame (unique.Make copies a string it does not hold yet, so a kept name
// keeps nothing else of the frame alive):
//   - the topic names of commits and offset fetches: the timeline keeps
//     each commit up to a minute, a suspect commit for as long as its
//     generation, and the committed offsets by topic;
//   - of the classic protocol's JoinGroup, SyncGroup and LeaveGroup, the
//     names the timeline and the diagnosis keep per generation and per
//     member: group, member and instance ids, protocol type and names,
//     the leader, racks, and the topics of subscriptions and assignments.
//
// Heartbeats and the other APIs are left alone: what they carry is either
// not kept or kept once per group or member, and they are the most
// frequent exchanges. Reasons and user data are left alone too: they are
// seldom shared, and a canonical copy of a string shared by nobody costs
// more than the string. unique forgets a name nobody holds a handle of at a
// garbage collection, so that a cluster whose jobs create topics without
// end does not grow it without end; a name made again after that is a
// second copy, shared from then on.
func intern(events []decode.Event) {
	for i := range events {
		ev := &events[i]
		switch {
		case ev.OffsetCommit != nil:
			for j := range ev.OffsetCommit.Topics {
				in(&ev.OffsetCommit.Topics[j].Topic)
			}
		case ev.OffsetFetch != nil:
			for j := range ev.OffsetFetch.Offsets {
				in(&ev.OffsetFetch.Offsets[j].Topic)
			}
		case ev.JoinGroup != nil:
			in(&ev.Group)
			internJoinGroup(ev.JoinGroup)
		case ev.SyncGroup != nil:
			in(&ev.Group)
			internSyncGroup(ev.SyncGroup)
		case ev.LeaveGroup != nil:
			in(&ev.Group)
			for j := range ev.LeaveGroup.Members {
				lv := &ev.LeaveGroup.Members[j]
				in(&lv.MemberID)
				in(&lv.InstanceID)
			}
		}
	}
}

// in replaces *s with its canonical copy; the empty string stays as it is.
func in(s *string) {
	if *s != "" {
		*s = unique.Make(*s).Value()
	}
}

func internJoinGroup(j *decode.JoinGroup) {
	in(&j.MemberID)
	in(&j.InstanceID)
	in(&j.ProtocolType)
	in(&j.ProtocolName)
	in(&j.Leader)
	in(&j.AssignedMemberID)
	for k := range j.Protocols {
		p := &j.Protocols[k]
		in(&p.Name)
		internSubscription(p.Subscription)
	}
	for k := range j.Members {
		m := &j.Members[k]
		in(&m.MemberID)
		in(&m.InstanceID)
		internSubscription(m.Subscription)
	}
}

func internSyncGroup(s *decode.SyncGroup) {
	in(&s.MemberID)
	in(&s.InstanceID)
	in(&s.ProtocolType)
	in(&s.ProtocolName)
	internAssignment(s.Assignment)
	for k := range s.Plan {
		p := &s.Plan[k]
		in(&p.MemberID)
		internAssignment(p.Assignment)
	}
}

func internSubscription(s *decode.Subscription) {
	if s == nil {
		return
	}
	for k := range s.Topics {
		in(&s.Topics[k])
	}
	in(&s.Rack)
	internTopics(s.OwnedPartitions)
	if s.Sticky != nil {
		internTopics(s.Sticky.CurrentAssignment)
	}
}

func internAssignment(a *decode.Assignment) {
	if a != nil {
		internTopics(a.Partitions)
	}
}

func internTopics(tps []decode.TopicPartitions) {
	for k := range tps {
		in(&tps[k].Topic)
	}
}
