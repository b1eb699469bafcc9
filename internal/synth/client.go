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

// exchange is the exchange of req and resp on c, the request sent at at
// and answered latency later: when it completes, and how to encode it. It
// takes c's next correlation id now; both frames are encoded by kmsg at
// req's version when encode is called. req and resp must not change after.
func (c *client) exchange(req kmsg.Request, resp kmsg.Response, at time.Time, latency time.Duration) (done time.Time, encode func() *decode.Exchange) {
	resp.SetVersion(req.GetVersion())
	c.corr++
	corr := c.corr
	return at.Add(latency), func() *decode.Exchange {
		return c.build(req, resp.AppendTo(responseHeader(corr, resp.Key(), resp.IsFlexible(), 0)), corr, at, latency)
	}
}

// exchangeEncoded is exchange with the response's body already encoded at
// req's version (shared: encode copies it into the frame).
func (c *client) exchangeEncoded(req kmsg.Request, body []byte, at time.Time, latency time.Duration) (done time.Time, encode func() *decode.Exchange) {
	c.corr++
	corr := c.corr
	return at.Add(latency), func() *decode.Exchange {
		return c.build(req, append(responseHeader(corr, req.Key(), req.IsFlexible(), len(body)), body...), corr, at, latency)
	}
}

// build is the exchange of req, answered with response, at correlation id
// corr.
func (c *client) build(req kmsg.Request, response []byte, corr int32, at time.Time, latency time.Duration) *decode.Exchange {
	// AppendRequest writes the 4-byte size prefix the journal does not keep.
	frame := c.format.AppendRequest(nil, req, corr)[4:]
	return &decode.Exchange{
		ConnID:        c.connID,
		ClientAddr:    c.addr,
		BrokerID:      c.brokerID,
		APIKey:        req.Key(),
		APIVersion:    req.GetVersion(),
		CorrelationID: corr,
		ClientID:      c.clientID,
		RequestAt:     at,
		ResponseAt:    at.Add(latency),
		Request:       frame,
		Response:      response,
	}
}

// responseHeader is the start of a response of api key as on the wire,
// without its size prefix, with room for n more bytes: the correlation
// id, then a tag section when the response is flexible (never for
// ApiVersions).
func responseHeader(corr int32, key int16, flexible bool, n int) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 5+n), uint32(corr))
	if flexible && key != int16(kmsg.ApiVersions) {
		b = append(b, 0)
	}
	return b
}
