package decode

// FindCoordinator (key 10), as kmsg knows it (v0-v6, flexible from v3):
//
//   v0: CoordinatorKey (a group); response ErrorCode, NodeID, Host, Port.
//   v1: CoordinatorType (0 group, 1 transaction); response ThrottleMillis
//       and ErrorMessage.
//   v2: same as v1 (throttling after the response).
//   v3: flexible.
//   v4: batched: CoordinatorKeys, and Coordinators[{Key, NodeID, Host, Port,
//       ErrorCode}] in the response (KIP-699); one Event per key.
//   v5: may answer TRANSACTION_ABORTABLE (KIP-890).
//   v6: CoordinatorType 2, share groups (KIP-932).
//
// Event.Group holds the key, whatever its type: for transaction keys it is
// a transactional id.

import "github.com/twmb/franz-go/pkg/kmsg"

func decodeFindCoordinator(_ *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.FindCoordinatorRequest)
	p, _ := resp.(*kmsg.FindCoordinatorResponse)
	if q.Version < 4 {
		e.Group = q.CoordinatorKey
		f := &FindCoordinator{KeyType: q.CoordinatorType}
		if p != nil {
			f.ErrorCode, f.NodeID, f.Host, f.Port = p.ErrorCode, p.NodeID, p.Host, p.Port
		}
		e.FindCoordinator = f
		return append(dst, e)
	}
	if len(q.CoordinatorKeys) == 0 {
		return dst
	}
	events := dst
	for _, key := range q.CoordinatorKeys {
		ev := e
		ev.Group = key
		f := &FindCoordinator{KeyType: q.CoordinatorType}
		if p != nil {
			for _, c := range p.Coordinators {
				if c.Key == key {
					f.ErrorCode, f.NodeID, f.Host, f.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
					break
				}
			}
		}
		ev.FindCoordinator = f
		events = append(events, ev)
	}
	return events
}
