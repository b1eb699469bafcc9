package decode

// SyncGroup (key 14), as kmsg knows it (v0-v5, flexible from v4):
//
//   v0: Group, Generation, MemberID, GroupAssignment (the leader's plan;
//       empty from followers); response ErrorCode, MemberAssignment.
//   v1: response ThrottleMillis.
//   v2: same as v1 (throttling after the response).
//   v3: InstanceID (KIP-345).
//   v4: flexible.
//   v5: ProtocolType and Protocol in request and response (KIP-559).
//       Before v5 the protocol type, which says how to read assignments,
//       comes from the Decoder's memory of the group's last JoinGroup.

import "github.com/twmb/franz-go/pkg/kmsg"

func decodeSyncGroup(d *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.SyncGroupRequest)
	p, _ := resp.(*kmsg.SyncGroupResponse)
	e.Group = q.Group
	s := &SyncGroup{
		MemberID:     q.MemberID,
		InstanceID:   str(q.InstanceID),
		Generation:   q.Generation,
		ProtocolType: str(q.ProtocolType),
		ProtocolName: str(q.Protocol),
	}
	if s.ProtocolType == "" && p != nil {
		s.ProtocolType = str(p.ProtocolType)
	}
	if s.ProtocolName == "" && p != nil {
		s.ProtocolName = str(p.Protocol)
	}
	if s.ProtocolType == "" {
		s.ProtocolType = d.protocolType(q.Group)
	}
	if len(q.GroupAssignment) > 0 {
		s.Plan = make([]MemberAssignment, len(q.GroupAssignment))
	}
	for i, a := range q.GroupAssignment {
		b := raw(a.MemberAssignment)
		as, conn := memberAssignment(s.ProtocolType, s.ProtocolName, b)
		s.Plan[i] = MemberAssignment{MemberID: a.MemberID, Assignment: as, ConnectAssignment: conn, Raw: b}
	}
	if p != nil {
		s.ErrorCode = p.ErrorCode
		s.RawAssignment = raw(p.MemberAssignment)
		// An error response carries no assignment: do not present one.
		if p.ErrorCode == 0 {
			s.Assignment, s.ConnectAssignment = memberAssignment(s.ProtocolType, s.ProtocolName, s.RawAssignment)
		}
	}
	e.SyncGroup = s
	return append(dst, e)
}
