package decode

import (
	"cmp"
	"strings"
)

// Summary is who an event is about and how it ended, the facts a one-line
// log or listing shows for any group API.
type Summary struct {
	// Member is the member id: the one the coordinator assigned when the
	// response carries it. Batched LeaveGroup lists its members
	// comma-separated, as Instance does their instance ids.
	Member   string
	Instance string
	// Generation is the generation the event used or got, the member epoch
	// for KIP-848 (see Epoch), or -1 when the API carries none.
	Generation int32
	// Epoch reports whether Generation is a KIP-848 member epoch.
	Epoch bool
	// ErrorCode is the top-level error, or the first per-member or
	// per-partition error when the top level has none.
	ErrorCode int16
}

// Summary picks the member, instance, generation and error of e.
func (e *Event) Summary() Summary {
	s := Summary{Generation: -1}
	switch {
	case e.FindCoordinator != nil:
		s.ErrorCode = e.FindCoordinator.ErrorCode
	case e.JoinGroup != nil:
		j := e.JoinGroup
		s.Member, s.Instance, s.ErrorCode = j.MemberID, j.InstanceID, j.ErrorCode
		if j.AssignedMemberID != "" {
			s.Member = j.AssignedMemberID
		}
		if e.Responded() && j.ErrorCode == 0 {
			s.Generation = j.Generation
		}
	case e.SyncGroup != nil:
		g := e.SyncGroup
		s.Member, s.Instance, s.Generation, s.ErrorCode = g.MemberID, g.InstanceID, g.Generation, g.ErrorCode
	case e.Heartbeat != nil:
		h := e.Heartbeat
		s.Member, s.Instance, s.Generation, s.ErrorCode = h.MemberID, h.InstanceID, h.Generation, h.ErrorCode
	case e.LeaveGroup != nil:
		l := e.LeaveGroup
		s.ErrorCode = l.ErrorCode
		var members, instances []string
		for _, m := range l.Members {
			members = append(members, m.MemberID)
			if m.InstanceID != "" {
				instances = append(instances, m.InstanceID)
			}
			if s.ErrorCode == 0 {
				s.ErrorCode = m.ErrorCode
			}
		}
		s.Member, s.Instance = strings.Join(members, ","), strings.Join(instances, ",")
	case e.OffsetCommit != nil:
		c := e.OffsetCommit
		s.Member, s.Instance, s.Generation = c.MemberID, c.InstanceID, c.Generation
		s.ErrorCode = firstCommitError(c.Topics)
	case e.TxnOffsetCommit != nil:
		c := e.TxnOffsetCommit
		s.Member, s.Instance, s.Generation = c.MemberID, c.InstanceID, c.Generation
		s.ErrorCode = firstCommitError(c.Topics)
	case e.EndTxn != nil:
		s.ErrorCode = e.EndTxn.ErrorCode
	case e.OffsetFetch != nil:
		o := e.OffsetFetch
		s.Member, s.ErrorCode = o.MemberID, o.ErrorCode
		if o.MemberID != "" {
			s.Generation, s.Epoch = o.MemberEpoch, true
		}
		for _, t := range o.Offsets {
			for _, p := range t.Partitions {
				if s.ErrorCode == 0 {
					s.ErrorCode = p.ErrorCode
				}
			}
		}
	case e.ConsumerGroupHeartbeat != nil:
		h := e.ConsumerGroupHeartbeat
		s.Member, s.Generation, s.Epoch, s.ErrorCode = h.MemberID, h.MemberEpoch, true, h.ErrorCode
		if h.InstanceID != nil {
			s.Instance = *h.InstanceID
		}
		if h.AssignedMemberID != "" {
			s.Member = h.AssignedMemberID
		}
		if e.Responded() && h.ErrorCode == 0 {
			s.Generation = h.AssignedEpoch
		}
	case e.ShareGroupHeartbeat != nil:
		h := e.ShareGroupHeartbeat
		s.Member, s.Generation, s.Epoch, s.ErrorCode = h.MemberID, h.MemberEpoch, true, h.ErrorCode
		if e.Responded() && h.ErrorCode == 0 {
			s.Generation = h.AssignedEpoch
		}
	case e.StreamsGroupHeartbeat != nil:
		h := e.StreamsGroupHeartbeat
		s.Member, s.Generation, s.Epoch, s.ErrorCode = h.MemberID, h.MemberEpoch, true, h.ErrorCode
		if h.InstanceID != nil {
			s.Instance = *h.InstanceID
		}
		if e.Responded() && h.ErrorCode == 0 {
			s.Generation = h.AssignedEpoch
		}
	case e.StreamsGroupDescribe != nil:
		s.ErrorCode = e.StreamsGroupDescribe.ErrorCode
	case e.ShareFetch != nil:
		f := e.ShareFetch
		s.Member, s.ErrorCode = f.MemberID, f.ErrorCode
		for _, p := range f.Partitions {
			if s.ErrorCode == 0 {
				s.ErrorCode = cmp.Or(p.ErrorCode, p.AcknowledgeErrorCode)
			}
		}
	case e.ShareAcknowledge != nil:
		a := e.ShareAcknowledge
		s.Member, s.ErrorCode = a.MemberID, a.ErrorCode
		for _, p := range a.Partitions {
			if s.ErrorCode == 0 {
				s.ErrorCode = p.ErrorCode
			}
		}
	}
	return s
}

// firstCommitError is the first partition error of a commit, or 0.
func firstCommitError(ts []CommitTopic) int16 {
	for _, t := range ts {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return p.ErrorCode
			}
		}
	}
	return 0
}
