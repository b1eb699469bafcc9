package decode

// LeaveGroup (key 13), as kmsg knows it (v0-v5, flexible from v4):
//
//   v0: Group, MemberID; response ErrorCode.
//   v1: response ThrottleMillis.
//   v2: same as v1 (throttling after the response).
//   v3: batched Members with InstanceID; per-member results (KIP-345).
//   v4: flexible.
//   v5: per-member Reason (KIP-800), e.g. "consumer poll timeout has
//       expired." from a Java consumer that exceeded max.poll.interval.ms.

import "github.com/twmb/franz-go/pkg/kmsg"

func decodeLeaveGroup(_ *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.LeaveGroupRequest)
	e.Group = q.Group
	l := &LeaveGroup{}
	if q.Version < 3 {
		l.Members = []LeavingMember{{MemberID: q.MemberID}}
	} else if len(q.Members) > 0 {
		l.Members = make([]LeavingMember, len(q.Members))
		for i, m := range q.Members {
			l.Members[i] = LeavingMember{MemberID: m.MemberID, InstanceID: str(m.InstanceID), Reason: str(m.Reason)}
		}
	}
	if p, ok := resp.(*kmsg.LeaveGroupResponse); ok {
		l.ErrorCode = p.ErrorCode
		for _, r := range p.Members {
			l.Members = leaveResult(l.Members, r.MemberID, str(r.InstanceID), r.ErrorCode)
		}
	}
	e.LeaveGroup = l
	return append(dst, e)
}

// leaveResult records one member's result: on the request's member with the
// same member and instance id, else the same instance id (a static member
// may leave without its member id), else as a member of its own.
func leaveResult(ms []LeavingMember, memberID, instanceID string, code int16) []LeavingMember {
	for i := range ms {
		if ms[i].MemberID == memberID && ms[i].InstanceID == instanceID {
			ms[i].ErrorCode = code
			return ms
		}
	}
	if instanceID != "" {
		for i := range ms {
			if ms[i].InstanceID == instanceID {
				ms[i].ErrorCode = code
				return ms
			}
		}
	}
	return append(ms, LeavingMember{MemberID: memberID, InstanceID: instanceID, ErrorCode: code})
}
