package pipeline

import (
	"encoding/binary"
	"io"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// base is when the test exchanges start.
var base = time.Date(2026, 3, 15, 14, 2, 0, 0, time.UTC)

// heartbeat is a Heartbeat v4 exchange of group g with correlation id corr,
// answered with errCode, completed at base plus sec seconds.
func heartbeat(corr int32, errCode int16, sec int) *decode.Exchange {
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(4)
	req.Group, req.MemberID, req.Generation = "g", "m-1", 3
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.SetVersion(4)
	resp.ErrorCode = errCode
	return exchange(req, resp, corr, sec)
}

// garbage is a Heartbeat v4 exchange whose body does not decode.
func garbage(corr int32, sec int) *decode.Exchange {
	x := heartbeat(corr, 0, sec)
	x.Request = x.Request[:len(x.Request)-3]
	return x
}

// exchange frames req and resp as the proxy hands them out.
func exchange(req kmsg.Request, resp kmsg.Response, corr int32, sec int) *decode.Exchange {
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("client-1")).AppendRequest(nil, req, corr)
	r := binary.BigEndian.AppendUint32(nil, uint32(corr))
	if resp.IsFlexible() {
		r = append(r, 0) // the response header's tags
	}
	at := base.Add(time.Duration(sec) * time.Second)
	return &decode.Exchange{
		ConnID: 1, ClientAddr: "127.0.0.1:50000", BrokerID: 0,
		APIKey: req.Key(), APIVersion: req.GetVersion(), CorrelationID: corr, ClientID: "client-1",
		RequestAt: at.Add(-time.Millisecond), ResponseAt: at,
		Request: frame[4:], Response: resp.AppendTo(r),
	}
}

// step is one answer of a scriptedSource.
type step struct {
	x       *decode.Exchange // nil: the end
	dropped uint64
}

// scriptedSource hands out its steps, then io.EOF.
type scriptedSource struct{ steps []step }

func (s *scriptedSource) Next() (*decode.Exchange, uint64, error) {
	if len(s.steps) == 0 {
		return nil, 0, io.EOF
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	if st.x == nil {
		return nil, st.dropped, io.EOF
	}
	return st.x, st.dropped, nil
}

// trace writes down, in order, what each consumer was handed.
type trace struct{ seq []string }

type traceExchanges struct{ t *trace }

func (c traceExchanges) Append(x *decode.Exchange) {
	c.t.seq = append(c.t.seq, "x"+itoa(x.CorrelationID))
}

func (c traceExchanges) Dropped(n uint64, _ time.Time) {
	c.t.seq = append(c.t.seq, "drop"+itoa(int32(n)))
}

type traceEvents struct{ t *trace }

func (c traceEvents) AddEvents(events []decode.Event) {
	s := "e"
	for i, e := range events {
		if i > 0 {
			s += ","
		}
		s += itoa(e.CorrelationID)
	}
	c.t.seq = append(c.t.seq, s)
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
