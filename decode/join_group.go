package decode

// JoinGroup (key 11), as kmsg knows it (v0-v9, flexible from v6):
//
//   v0: Group, SessionTimeoutMillis, MemberID, ProtocolType, Protocols;
//       response ErrorCode, Generation, Protocol, LeaderID, MemberID,
//       Members (the leader's response only).
//   v1: RebalanceTimeoutMillis; v0 uses the session timeout for both.
//   v2: response ThrottleMillis.
//   v3: same as v2 (throttling after the response).
//   v4: an unknown member may get MEMBER_ID_REQUIRED (79) and a member id
//       to rejoin with (KIP-394).
//   v5: InstanceID, in the request and per response member (KIP-345).
//   v6: flexible.
//   v7: response ProtocolType; response Protocol nullable (KIP-559).
//   v8: request Reason (KIP-800).
//   v9: response SkipAssignment (KIP-814).

import "github.com/twmb/franz-go/pkg/kmsg"

func decodeJoinGroup(d *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.JoinGroupRequest)
	e.Group = q.Group
	j := &JoinGroup{
		MemberID:         q.MemberID,
		InstanceID:       str(q.InstanceID),
		ProtocolType:     q.ProtocolType,
		SessionTimeout:   millis(q.SessionTimeoutMillis),
		RebalanceTimeout: millis(q.RebalanceTimeoutMillis),
		Reason:           str(q.Reason),
		Protocols:        make([]JoinProtocol, len(q.Protocols)),
	}
	if q.Version == 0 {
		j.RebalanceTimeout = j.SessionTimeout
	}
	d.rememberProtocolType(q.Group, q.ProtocolType)
	for i, p := range q.Protocols {
		b := raw(p.Metadata)
		sub, conn := memberMetadata(q.ProtocolType, p.Name, b)
		j.Protocols[i] = JoinProtocol{Name: p.Name, Subscription: sub, Connect: conn, Metadata: b}
	}
	if p, ok := resp.(*kmsg.JoinGroupResponse); ok {
		j.ErrorCode = p.ErrorCode
		j.Generation = p.Generation
		j.ProtocolName = str(p.Protocol)
		j.Leader = p.LeaderID
		j.AssignedMemberID = p.MemberID
		j.SkipAssignment = p.SkipAssignment
		protocolType := q.ProtocolType
		if p.ProtocolType != nil && *p.ProtocolType != "" {
			protocolType = *p.ProtocolType
			d.rememberProtocolType(q.Group, protocolType)
		}
		if len(p.Members) > 0 {
			j.Members = make([]JoinMember, len(p.Members))
		}
		for i, m := range p.Members {
			b := raw(m.ProtocolMetadata)
			sub, conn := memberMetadata(protocolType, j.ProtocolName, b)
			j.Members[i] = JoinMember{
				MemberID:     m.MemberID,
				InstanceID:   str(m.InstanceID),
				Subscription: sub,
				Connect:      conn,
				Metadata:     b,
			}
		}
	}
	e.JoinGroup = j
	return append(dst, e)
}
