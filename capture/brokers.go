package capture

import (
	"net/netip"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// brokers are the TCP ports a capture takes for Kafka brokers' (given, and
// learned from the Metadata and FindCoordinator responses it reads), and
// the node id behind each port when the cluster names one node per port.
type brokers struct {
	ports [1 << 16 / 64]uint64 // a bit per port
	// nodes maps a port to the node listening on it, or to ambiguous when
	// several nodes listen on that port (on different hosts).
	nodes map[uint16]int32
	// learned counts the ports added from responses.
	learned int
}

// ambiguous marks a port several nodes listen on.
const ambiguous = -2

func newBrokers(ports []uint16) *brokers {
	b := &brokers{nodes: map[uint16]int32{}}
	for _, p := range ports {
		b.add(p)
	}
	return b
}

// has reports whether port is a broker's.
func (b *brokers) has(port uint16) bool { return b.ports[port/64]&(1<<(port%64)) != 0 }

// add makes port a broker's; it reports whether it was new.
func (b *brokers) add(port uint16) bool {
	if b.has(port) {
		return false
	}
	b.ports[port/64] |= 1 << (port % 64)
	return true
}

// node is the node id behind port, or -1 when unknown, as the proxy says
// of its bootstrap connections.
func (b *brokers) node(port uint16) int32 {
	if n, ok := b.nodes[port]; ok && n != ambiguous {
		return n
	}
	return -1
}

// learn reads the brokers a Metadata or FindCoordinator response names.
func (b *brokers) learn(x *decode.Exchange) {
	if x.Response == nil || x.APIKey != int16(kmsg.Metadata) && x.APIKey != int16(kmsg.FindCoordinator) {
		return
	}
	hl, err := decode.ResponseHeaderLen(x.APIKey, x.APIVersion, x.Response)
	if err != nil {
		return
	}
	body := x.Response[hl:]
	switch x.APIKey {
	case int16(kmsg.Metadata):
		ports := map[uint16][]int32{}
		if !metadataBrokers(x.APIVersion, body, func(node, p int32) {
			if p, ok := port(p); ok {
				ports[p] = append(ports[p], node)
			}
		}) {
			return
		}
		for p, ids := range ports {
			if b.add(p) {
				b.learned++
			}
			b.nodes[p] = ids[0]
			if len(ids) > 1 {
				b.nodes[p] = ambiguous
			}
		}
	case int16(kmsg.FindCoordinator):
		r := kmsg.NewPtrFindCoordinatorResponse()
		r.Version = x.APIVersion
		if r.ReadFrom(body) != nil {
			return
		}
		if p, ok := port(r.Port); ok && r.ErrorCode == 0 && b.add(p) {
			b.learned++
		}
		for _, c := range r.Coordinators {
			if p, ok := port(c.Port); ok && c.ErrorCode == 0 && b.add(p) {
				b.learned++
			}
		}
	}
}

// metadataBrokers calls f with the node id and port of each broker a
// Metadata response body of version v names, and reports whether they
// read. Only the brokers, at the start of the body, are read, with kbin:
// decoding the whole response with kmsg (every topic and partition)
// would add a large share of a capture's allocations (docs/benchmarks.md,
// Packet captures).
func metadataBrokers(v int16, body []byte, f func(node, port int32)) bool {
	r := kbin.Reader{Src: body}
	flexible := v >= 9
	if v >= 3 {
		r.Int32() // throttle
	}
	var n int32
	if flexible {
		n = r.CompactArrayLen()
	} else {
		n = r.ArrayLen()
	}
	for range max(n, 0) {
		node := r.Int32()
		if flexible {
			r.UnsafeCompactString() // host
			p := r.Int32()
			if n := r.Uvarint(); n > 1 { // rack
				r.Span(int(n - 1))
			}
			skipTags(&r)
			if r.Ok() {
				f(node, p)
			}
			continue
		}
		r.UnsafeString() // host
		p := r.Int32()
		if v >= 1 {
			r.Span(max(int(r.Int16()), 0)) // rack
		}
		if r.Ok() {
			f(node, p)
		}
	}
	return r.Ok()
}

// skipTags skips a tag section.
func skipTags(r *kbin.Reader) {
	for range r.Uvarint() {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// port is p as a TCP port, if it is one.
func port(p int32) (uint16, bool) { return uint16(p), p > 0 && p < 1<<16 }

// String is the endpoint as "ip:port" ("[ip]:port" for IPv6).
func (e endpoint) String() string {
	return netip.AddrPortFrom(netip.AddrFrom16(e.ip).Unmap(), e.port).String()
}
