package decode

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgPair is a request and its response as kmsg decodes them.
type kmsgPair struct {
	req  kmsg.Request
	resp kmsg.Response
	// unsafeReq and unsafeResp are req and resp as unsafeReaders, in a
	// reused pair: asserted once, not at every exchange.
	unsafeReq  unsafeReader
	unsafeResp unsafeReader
}

// unsafeReader is a kmsg message read with strings aliasing the bytes
// read (every kmsg message has UnsafeReadFrom).
type unsafeReader interface{ UnsafeReadFrom([]byte) error }

// reusedKeys are APIs a busy proxy sees most (Metadata, OffsetCommit),
// whose kmsg structs each Decoder keeps and decodes into again and again,
// with strings that alias the frames (UnsafeReadFrom). Their decoders copy
// every value they keep (own, copier), so no event aliases the frames or
// the structs. (Heartbeat's structs stay on the stack instead: see
// api.direct.) Other APIs get fresh structs and copied strings.
var reusedKeys = []int16{int16(kmsg.Metadata), int16(kmsg.OffsetCommit)}

// reusedPairs holds a Decoder's reused structs, one pair per reusedKeys
// entry, made when first needed.
type reusedPairs [2]*kmsgPair

// reuseIndex is key's index in reusedKeys, or -1: a switch instead of a
// lookup per exchange.
func reuseIndex(key int16) int {
	switch key {
	case int16(kmsg.Metadata):
		return 0
	case int16(kmsg.OffsetCommit):
		return 1
	}
	return -1
}

// getPair returns a request and response to decode an API's frames into:
// d's reused ones for reusedKeys, reset, whose strings then alias the
// frames; fresh ones otherwise (resp nil: the caller makes it).
func (d *Decoder) getPair(key int16) *kmsgPair {
	i := reuseIndex(key)
	if i < 0 {
		return &kmsgPair{req: kmsg.RequestForKey(key)}
	}
	pair := d.reuse[i]
	if pair == nil {
		req := kmsg.RequestForKey(key)
		pair = &kmsgPair{req: req, resp: req.ResponseKind()}
		pair.unsafeReq, _ = pair.req.(unsafeReader)
		pair.unsafeResp, _ = pair.resp.(unsafeReader)
		d.reuse[i] = pair
	}
	resetPair(pair)
	return pair
}

// resetPair zeroes a reused pair's fields, keeping the capacity of its
// top-level arrays (kmsg zeroes the elements it reads into): a field a
// version does not carry must not keep a value from an earlier frame.
func resetPair(p *kmsgPair) {
	switch q := p.req.(type) {
	case *kmsg.OffsetCommitRequest:
		*q = kmsg.OffsetCommitRequest{Topics: q.Topics[:0]}
	case *kmsg.MetadataRequest:
		*q = kmsg.MetadataRequest{Topics: q.Topics[:0]}
	}
	switch r := p.resp.(type) {
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
