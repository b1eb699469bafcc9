package decode

// Heartbeat (key 12), as kmsg knows it (v0-v4, flexible from v4):
//
//   v0: Group, Generation, MemberID; response ErrorCode
//       (REBALANCE_IN_PROGRESS tells the member to rejoin).
//   v1: response ThrottleMillis.
//   v2: same as v1 (throttling after the response).
//   v3: InstanceID (KIP-345).
//   v4: flexible.

import "github.com/twmb/franz-go/pkg/kmsg"

// decodeHeartbeat reads reused structs whose strings alias the frames: it
// keeps copies (copier), all three in one allocation.
func decodeHeartbeat(d *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.HeartbeatRequest)
	var c copier
	c.grow(len(q.Group) + len(q.MemberID) + lenPtr(q.InstanceID))
	e.Group = c.own(q.Group)
	h := &Heartbeat{MemberID: c.own(q.MemberID), InstanceID: c.ownPtr(q.InstanceID), Generation: q.Generation}
	if p, ok := resp.(*kmsg.HeartbeatResponse); ok {
		h.ErrorCode = p.ErrorCode
	}
	e.Heartbeat = h
	return append(dst, e)
}
