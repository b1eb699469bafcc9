package synth

import (
	"bytes"
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
	corr     int32
}

// encodeFunc encodes a pending exchange's frames, when Next returns it.
type encodeFunc func(e *encoder) *decode.Exchange

// exchange is the exchange of req and resp on c, the request sent at at
// and answered latency later: when it completes, and how to encode it. It
// takes c's next correlation id now; both frames are encoded by kmsg at
// req's version when encode is called. req and resp must not change after.
func (c *client) exchange(req kmsg.Request, resp kmsg.Response, at time.Time, latency time.Duration) (done time.Time, encode encodeFunc) {
	resp.SetVersion(req.GetVersion())
	c.corr++
	corr := c.corr
	return at.Add(latency), func(e *encoder) *decode.Exchange {
		return e.exchange(c, req, resp.AppendTo(e.responseHeader(corr, resp.Key(), resp.IsFlexible())), corr, at, latency)
	}
}

// encoder encodes the frames of the exchanges Next returns, one at a time:
// into scratch buffers and values it reuses, each frame then copied out at
// its size, so that the traffic keeps nothing per exchange once it is
// returned.
type encoder struct {
	request, response []byte
	// metadataRequest and metadataResponse are filled for each Metadata
	// exchange (see metadata).
	metadataRequest  kmsg.MetadataRequest
	metadataResponse kmsg.MetadataResponse
}

// exchange is the exchange of req on c, answered with response (in
// e.response), at correlation id corr.
func (e *encoder) exchange(c *client, req kmsg.Request, response []byte, corr int32, at time.Time, latency time.Duration) *decode.Exchange {
	e.response = response
	e.request = req.AppendTo(requestHeader(e.request[:0], req, corr, c.clientID))
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
		Request:       bytes.Clone(e.request),
		Response:      bytes.Clone(e.response),
	}
}

// requestHeader appends to b the header of req from clientID at
// correlation id corr, as kmsg.RequestFormatter writes it without the size
// prefix the journal does not keep: api key, version, correlation id,
// client id, then an empty tag section when req is flexible.
func requestHeader(b []byte, req kmsg.Request, corr int32, clientID string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return b
}

// responseHeader is the start of a response of api key as on the wire,
// without its size prefix, in e's response buffer: the correlation id,
// then a tag section when the response is flexible (never for
// ApiVersions).
func (e *encoder) responseHeader(corr int32, key int16, flexible bool) []byte {
	b := binary.BigEndian.AppendUint32(e.response[:0], uint32(corr))
	if flexible && key != int16(kmsg.ApiVersions) {
		b = append(b, 0)
	}
	return b
}
