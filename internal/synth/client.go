package synth

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// client is one simulated client connection through the proxy.
type client struct {
	connID   uint64
	addr     string
	clientID string
	brokerID int32
	format   *kmsg.RequestFormatter
	corr     int32
}

func newClient(connID uint64, addr, clientID string, brokerID int32) *client {
	return &client{
		connID: connID, addr: addr, clientID: clientID, brokerID: brokerID,
		format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
	}
}

// exchange builds the exchange of req and resp on c, the request sent at
// at and answered latency later. Both are encoded by kmsg at req's version.
func (c *client) exchange(req kmsg.Request, resp kmsg.Response, at time.Time, latency time.Duration) *decode.Exchange {
	resp.SetVersion(req.GetVersion())
	x := c.exchangeEncoded(req, nil, false, at, latency)
	x.Response = responseFrame(x.CorrelationID, resp)
	return x
}

// exchangeEncoded is exchange with the response's body already encoded at
// req's version (body), flexible or not; nil leaves Response to the
// caller.
func (c *client) exchangeEncoded(req kmsg.Request, body []byte, flexible bool, at time.Time, latency time.Duration) *decode.Exchange {
	c.corr++
	// AppendRequest writes the 4-byte size prefix the journal does not keep.
	frame := c.format.AppendRequest(nil, req, c.corr)[4:]
	var response []byte
	if body != nil {
		response = binary.BigEndian.AppendUint32(make([]byte, 0, 5+len(body)), uint32(c.corr))
		if flexible {
			response = append(response, 0)
		}
		response = append(response, body...)
	}
	return &decode.Exchange{
		ConnID:        c.connID,
		ClientAddr:    c.addr,
		BrokerID:      c.brokerID,
		APIKey:        req.Key(),
		APIVersion:    req.GetVersion(),
		CorrelationID: c.corr,
		ClientID:      c.clientID,
		RequestAt:     at,
		ResponseAt:    at.Add(latency),
		Request:       frame,
		Response:      response,
	}
}

// responseFrame is a response as on the wire, without its size prefix:
// the correlation id, a tag section when the response is flexible (never
// for ApiVersions), then the body.
func responseFrame(corr int32, resp kmsg.Response) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(corr))
	if resp.IsFlexible() && resp.Key() != 18 {
		b = append(b, 0)
	}
	return resp.AppendTo(b)
}
