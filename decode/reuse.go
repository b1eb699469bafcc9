package decode

import (
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgPair is a request and its response as kmsg decodes them.
type kmsgPair struct {
	req  kmsg.Request
	resp kmsg.Response
}

// reusedPools hold, for the APIs a busy proxy sees most (Heartbeat,
// OffsetCommit, Metadata), kmsg structs that are decoded into again and
// again, with strings that alias the frames (UnsafeReadFrom). Their
// decoders copy every value they keep (own), so no event aliases the
// frames or the structs. Other APIs get fresh structs and copied strings.
var reusedPools = map[int16]*sync.Pool{
	3:  pairPool(3),
	8:  pairPool(8),
	12: pairPool(12),
}

// poolFor is reusedPools[key] without a map lookup per exchange, or nil.
func poolFor(key int16) *sync.Pool {
	switch key {
	case 3:
		return metadataPairs
	case 8:
		return offsetCommitPairs
	case 12:
		return heartbeatPairs
	}
	return nil
}

var (
	metadataPairs     = reusedPools[3]
	offsetCommitPairs = reusedPools[8]
	heartbeatPairs    = reusedPools[12]
)

func pairPool(key int16) *sync.Pool {
	return &sync.Pool{New: func() any {
		req := kmsg.RequestForKey(key)
		return &kmsgPair{req: req, resp: req.ResponseKind()}
	}}
}

// getPair returns a request and response to decode an API's frames into,
// and whether they are reused (then strings alias the frames and the pair
// goes back with putPair).
func getPair(key int16) (*kmsgPair, bool) {
	if p := poolFor(key); p != nil {
		pair := p.Get().(*kmsgPair)
		resetPair(pair)
		return pair, true
	}
	req := kmsg.RequestForKey(key)
	return &kmsgPair{req: req}, false
}

func putPair(key int16, pair *kmsgPair) { poolFor(key).Put(pair) }

// resetPair zeroes a reused pair's fields, keeping the capacity of its
// top-level arrays (kmsg zeroes the elements it reads into): a field a
// version does not carry must not keep a value from an earlier frame.
func resetPair(p *kmsgPair) {
	switch q := p.req.(type) {
	case *kmsg.HeartbeatRequest:
		*q = kmsg.HeartbeatRequest{}
	case *kmsg.OffsetCommitRequest:
		*q = kmsg.OffsetCommitRequest{Topics: q.Topics[:0]}
	case *kmsg.MetadataRequest:
		*q = kmsg.MetadataRequest{Topics: q.Topics[:0]}
	}
	switch r := p.resp.(type) {
	case *kmsg.HeartbeatResponse:
		*r = kmsg.HeartbeatResponse{}
	case *kmsg.OffsetCommitResponse:
		*r = kmsg.OffsetCommitResponse{Topics: r.Topics[:0]}
	case *kmsg.MetadataResponse:
		*r = kmsg.MetadataResponse{Brokers: r.Brokers[:0], Topics: r.Topics[:0]}
	}
}

// own copies a string that may alias a frame (read by UnsafeReadFrom), so
// that events never alias the exchange. (Sharing equal strings through a
// table of those seen cost more in cache misses than it saved in
// allocations once a proxy sees thousands of groups and members.)
func own(s string) string { return strings.Clone(s) }

// ownPtr is own(*s), or "" when s is nil.
func ownPtr(s *string) string {
	if s == nil {
		return ""
	}
	return own(*s)
}

// copier copies the strings of one event that may alias a frame, like own,
// but into one allocation for them all: grow by their total length first,
// then own each. A copy kept long keeps its siblings' bytes (a few dozen)
// alive with it.
type copier struct{ b strings.Builder }

// grow makes room for n more bytes of copies.
func (c *copier) grow(n int) { c.b.Grow(n) }

// own returns a copy of s. (A Builder only appends: the bytes of a copy
// returned never change.)
func (c *copier) own(s string) string {
	if s == "" {
		return ""
	}
	start := c.b.Len()
	c.b.WriteString(s)
	return c.b.String()[start:]
}

// ownPtr is own(*s), or "" when s is nil.
func (c *copier) ownPtr(s *string) string {
	if s == nil {
		return ""
	}
	return c.own(*s)
}

// lenPtr is len(*s), or 0 when s is nil.
func lenPtr(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}
