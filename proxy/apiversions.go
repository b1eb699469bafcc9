package proxy

import (
	"bufio"
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// errUnsupportedVersion is Kafka's UNSUPPORTED_VERSION error code.
const errUnsupportedVersion = 35

// refuseApiVersions answers, itself, an ApiVersions request at a version
// above kmsg's, as a broker answers one above its own (KIP-511): in v0,
// with UNSUPPORTED_VERSION and the ApiVersions versions it supports, so
// that the client asks again within them. Forwarded, the broker's answer
// would not parse, and would reach the client unclamped: versions kproxy
// cannot rewrite, such as a Metadata whose broker addresses it could not
// replace. The answer is written once every request before it has been
// answered, in order; the request is not forwarded.
func (c *conn) refuseApiVersions(br *bufio.Reader, size int32, p pending) error {
	if _, err := br.Discard(int(size)); err != nil {
		c.log.Debug("client closed mid-request", zap.Error(err))
		return err
	}
	if c.p.once.first("apiversions", p.version) {
		c.log.Info("ApiVersions request above the version kproxy can read: answered UNSUPPORTED_VERSION, as a broker "+
			"would, so that the client retries at a version kproxy reads (logged once per version)",
			zap.Int16("api_version", p.version), zap.Int16("max_version", versionCaps[int16(kmsg.ApiVersions)]))
	}
	// When the connection ends meanwhile, the response pump drains the
	// queue, and the write below fails on the closed client socket.
	c.pending.waitEmpty()
	if _, err := c.client.Write(unsupportedApiVersions(p.corrID, versionCaps[int16(kmsg.ApiVersions)])); err != nil {
		c.log.Debug("response write failed", zap.Int16("api_key", p.key), zap.Error(err))
		return err
	}
	return nil
}

// unsupportedApiVersions is the frame of a v0 ApiVersions response with
// UNSUPPORTED_VERSION, listing ApiVersions v0 to max.
func unsupportedApiVersions(corrID int32, max int16) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = errUnsupportedVersion
	key := kmsg.NewApiVersionsResponseApiKey()
	key.ApiKey, key.MinVersion, key.MaxVersion = 18, 0, max
	resp.ApiKeys = append(resp.ApiKeys, key)
	out := binary.BigEndian.AppendUint32(make([]byte, 4, 64), uint32(corrID))
	out = resp.AppendTo(out)
	putSize(out, len(out)-4)
	return out
}
