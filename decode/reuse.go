package decode

import (
	"hash/maphash"
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
// decoders intern or copy every value they keep, so no event aliases the
// frames or the structs. Other APIs get fresh structs and copied strings.
var reusedPools = map[int16]*sync.Pool{
	3:  pairPool(3),
	8:  pairPool(8),
	12: pairPool(12),
}

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
	if p := reusedPools[key]; p != nil {
		pair := p.Get().(*kmsgPair)
		resetPair(pair)
		return pair, true
	}
	req := kmsg.RequestForKey(key)
	return &kmsgPair{req: req}, false
}

func putPair(key int16, pair *kmsgPair) { reusedPools[key].Put(pair) }

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

// internSlots is how many strings a Decoder shares (a power of two).
const internSlots = 1 << 14

// interner shares the strings that repeat from exchange to exchange:
// client ids, groups, member ids and topics. It is a direct-mapped cache:
// a string goes in the slot its hash picks, replacing what was there, so
// its size is fixed and a lookup costs a hash and a comparison.
type interner struct {
	mu    sync.Mutex
	seed  maphash.Seed
	slots []string
}

// intern returns b as a string, shared with an earlier equal one when
// still in its slot; it never aliases b.
func (d *Decoder) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	in := &d.strs
	in.mu.Lock()
	defer in.mu.Unlock()
	in.ready()
	slot := &in.slots[maphash.Bytes(in.seed, b)&(internSlots-1)]
	if *slot != string(b) {
		*slot = string(b)
	}
	return *slot
}

// own is intern for a string that may alias a frame (read by
// UnsafeReadFrom): the string returned is the Decoder's.
func (d *Decoder) own(s string) string {
	if s == "" {
		return ""
	}
	in := &d.strs
	in.mu.Lock()
	defer in.mu.Unlock()
	in.ready()
	slot := &in.slots[maphash.String(in.seed, s)&(internSlots-1)]
	if *slot != s {
		*slot = strings.Clone(s)
	}
	return *slot
}

// ownPtr is own(*s), or "" when s is nil.
func (d *Decoder) ownPtr(s *string) string {
	if s == nil {
		return ""
	}
	return d.own(*s)
}

// ready sets the interner up on first use; in.mu is held.
func (in *interner) ready() {
	if in.slots == nil {
		in.seed = maphash.MakeSeed()
		in.slots = make([]string, internSlots)
	}
}
