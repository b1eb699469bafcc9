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

// readHeartbeat decodes a Heartbeat exchange into kmsg structs of its own,
// which stay on the stack (they have no slices, and are used by type, not
// through an interface): no reused pair to reset for the most
// frequent exchange. Checks and errors are those of Decoder.decode. The
// strings read alias the frames: it keeps copies (copier), all three in
// one allocation.
func readHeartbeat(dst []Event, base Event, h RequestHeader, reqBody, respBody []byte, respErr error) ([]Event, error) {
	var q kmsg.HeartbeatRequest
	if h.APIVersion < 0 || h.APIVersion > q.MaxVersion() {
		return nil, errVersion(12, h.APIVersion, q.MaxVersion())
	}
	q.SetVersion(h.APIVersion)
	if err := q.UnsafeReadFrom(reqBody); err != nil {
		return nil, errRequest(12, h.APIVersion, err)
	}
	var p kmsg.HeartbeatResponse
	if respErr != nil {
		return nil, respErr
	}
	if respBody != nil {
		p.SetVersion(h.APIVersion)
		if err := p.UnsafeReadFrom(respBody); err != nil {
			return nil, errResponse(12, h.APIVersion, err)
		}
	}
	// The event is appended first and filled in place: building it whole
	// and then appending it would copy 200 bytes just written, whose loads
	// wait for those stores (a store-to-load forwarding stall).
	dst = append(dst, base)
	ev := &dst[len(dst)-1]
	var c copier
	c.grow(len(q.Group) + len(q.MemberID) + lenPtr(q.InstanceID))
	ev.Group = c.own(q.Group)
	hb := new(Heartbeat)
	hb.MemberID = c.own(q.MemberID)
	hb.InstanceID = c.ownPtr(q.InstanceID)
	hb.Generation = q.Generation
	hb.ErrorCode = p.ErrorCode // 0 without a response
	ev.Heartbeat = hb
	return dst, nil
}
