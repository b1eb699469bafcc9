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
// keeps copies (copier), all three in one allocation. The event is
// appended first and filled in place: building it whole and then
// appending it would copy 200 bytes just written, whose loads wait for
// those stores (a store-to-load forwarding stall).
func decodeHeartbeat(d *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.HeartbeatRequest)
	dst = append(dst, e)
	ev := &dst[len(dst)-1]
	var c copier
	c.grow(len(q.Group) + len(q.MemberID) + lenPtr(q.InstanceID))
	ev.Group = c.own(q.Group)
	h := new(Heartbeat)
	h.MemberID = c.own(q.MemberID)
	h.InstanceID = c.ownPtr(q.InstanceID)
	h.Generation = q.Generation
	if p, ok := resp.(*kmsg.HeartbeatResponse); ok {
		h.ErrorCode = p.ErrorCode
	}
	ev.Heartbeat = h
	return dst
}
