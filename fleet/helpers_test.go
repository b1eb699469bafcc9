package fleet

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// base is when the test exchanges start.
var base = time.Date(2026, 3, 15, 14, 2, 0, 0, time.UTC)

// ms is base plus n milliseconds.
func ms(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }

// frame frames req and resp as the proxy hands them out, completed at done
// after a 1 ms round trip; id is the connection id, which names the
// exchange in the tests.
func frame(req kmsg.Request, resp kmsg.Response, id uint64, done time.Time) *decode.Exchange {
	const corr = 7
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("client-1")).AppendRequest(nil, req, corr)
	r := binary.BigEndian.AppendUint32(nil, uint32(corr))
	if resp.IsFlexible() {
		r = append(r, 0) // the response header's tags
	}
	return &decode.Exchange{
		ConnID: id, ClientAddr: "127.0.0.1:50000", BrokerID: 0,
		APIKey: req.Key(), APIVersion: req.GetVersion(), CorrelationID: corr, ClientID: "client-1",
		RequestAt: done.Add(-time.Millisecond), ResponseAt: done,
		Request: f[4:], Response: resp.AppendTo(r),
	}
}

// heartbeat is a Heartbeat exchange of group g named id, completed at done.
func heartbeat(id uint64, g string, done time.Time) *decode.Exchange {
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(4)
	req.Group, req.MemberID, req.Generation = g, "m-1", 3
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.SetVersion(4)
	return frame(req, resp, id, done)
}

// joined is a JoinGroup exchange of group g named id answered with
// generation gen at done.
func joined(id uint64, g string, gen int32, done time.Time) *decode.Exchange {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(7)
	req.Group, req.MemberID, req.ProtocolType = g, "m-1", "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 30000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	req.Protocols = append(req.Protocols, p)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(7)
	resp.Generation, resp.MemberID, resp.LeaderID = gen, "m-1", "m-1"
	pt, pn := "consumer", "range"
	resp.ProtocolType, resp.Protocol = &pt, &pn
	return frame(req, resp, id, done)
}
