package capture

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// segment is one TCP segment as a capture shows it: its addresses, its
// header's sequence and flags, and the part of its payload captured.
type segment struct {
	src, dst endpoint
	seq, ack uint32
	flags    uint8 // tcpFIN, tcpSYN, tcpRST, tcpACK
	// payload is the captured part of the segment's data; wireLen is how
	// long the data was on the wire (longer when the capture's snap length
	// cut the packet).
	payload []byte
	wireLen int
	at      time.Time
}

// TCP flags of a segment.
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpACK = 0x10
)

// endpoint is an IP address (IPv4 as IPv4-mapped IPv6) and a TCP port.
type endpoint struct {
	ip   [16]byte
	port uint16
}

// errNotTCP is what parseSegment says of a packet that is not a TCP
// segment over IPv4 or IPv6 it can read: other protocols, IP fragments,
// link types it does not know.
var errNotTCP = errors.New("not a TCP segment")

// Ethertypes, IP protocol numbers and IPv6 extension headers parseSegment
// reads.
const (
	etherIPv4  = 0x0800
	etherIPv6  = 0x86dd
	etherVLAN  = 0x8100
	etherQinQ  = 0x88a8
	protoTCP   = 6
	ipv6HopOpt = 0
	ipv6Route  = 43
	ipv6Frag   = 44
	ipv6Dest   = 60
)

// parseSegment reads the TCP segment in a packet of link type lt. The
// headers are read at their fixed offsets rather than through gopacket's
// layers: it is all the capture needs of them, it knows the segment's
// length on the wire when the snap length cut the packet, and it costs a
// few nanoseconds per packet, where most of a capture's packets carry
// payload that is skipped.
func parseSegment(lt layers.LinkType, data []byte, s *segment) error {
	var ether uint16
	switch lt {
	case layers.LinkTypeEthernet:
		if len(data) < 14 {
			return errNotTCP
		}
		ether, data = binary.BigEndian.Uint16(data[12:]), data[14:]
		for (ether == etherVLAN || ether == etherQinQ) && len(data) >= 4 {
			ether, data = binary.BigEndian.Uint16(data[2:]), data[4:]
		}
	case layers.LinkTypeLinuxSLL:
		if len(data) < 16 {
			return errNotTCP
		}
		ether, data = binary.BigEndian.Uint16(data[14:]), data[16:]
	case layers.LinkTypeLinuxSLL2:
		if len(data) < 20 {
			return errNotTCP
		}
		ether, data = binary.BigEndian.Uint16(data[0:]), data[20:]
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		// A 4-byte address family, in the host's byte order (Null) or
		// big-endian (Loop): the version nibble of the IP header says as
		// much.
		if len(data) < 4 {
			return errNotTCP
		}
		data = data[4:]
	case layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6, 12, 14:
		// Raw IP (12 and 14 are the DLT values some systems write for it).
	default:
		return errNotTCP
	}
	if ether == 0 && len(data) > 0 {
		switch data[0] >> 4 {
		case 4:
			ether = etherIPv4
		case 6:
			ether = etherIPv6
		}
	}
	switch ether {
	case etherIPv4:
		return parseIPv4(data, s)
	case etherIPv6:
		return parseIPv6(data, s)
	}
	return errNotTCP
}

// parseIPv4 reads an IPv4 packet carrying a TCP segment.
func parseIPv4(data []byte, s *segment) error {
	if len(data) < 20 || data[0]>>4 != 4 || data[9] != protoTCP {
		return errNotTCP
	}
	ihl := int(data[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(data[2:]))
	// A fragment (more fragments, or an offset) is not a whole segment.
	if binary.BigEndian.Uint16(data[6:])&0x3fff != 0 || ihl < 20 || len(data) < ihl {
		return errNotTCP
	}
	if total == 0 {
		total = len(data) // TCP segmentation offload leaves it zero
	}
	if total < ihl {
		return errNotTCP
	}
	s.src.ip = mapped(data[12:16])
	s.dst.ip = mapped(data[16:20])
	return parseTCP(data[ihl:], total-ihl, s)
}

// mapped is an IPv4 address as IPv4-mapped IPv6.
func mapped(b []byte) [16]byte {
	var ip [16]byte
	ip[10], ip[11] = 0xff, 0xff
	copy(ip[12:], b)
	return ip
}

// parseIPv6 reads an IPv6 packet carrying a TCP segment, after any
// hop-by-hop, routing and destination options headers.
func parseIPv6(data []byte, s *segment) error {
	if len(data) < 40 || data[0]>>4 != 6 {
		return errNotTCP
	}
	length := int(binary.BigEndian.Uint16(data[4:])) // after the fixed header
	next := data[6]
	copy(s.src.ip[:], data[8:24])
	copy(s.dst.ip[:], data[24:40])
	data = data[40:]
	if length == 0 {
		length = len(data) // a jumbogram, or offload
	}
	for next != protoTCP {
		switch next {
		case ipv6HopOpt, ipv6Route, ipv6Dest:
			if len(data) < 8 {
				return errNotTCP
			}
			n := (int(data[1]) + 1) * 8
			if len(data) < n || length < n {
				return errNotTCP
			}
			next, data, length = data[0], data[n:], length-n
		default: // fragments and anything else
			return errNotTCP
		}
	}
	return parseTCP(data, length, s)
}

// parseTCP reads a TCP segment whose length on the wire is wire; data may
// be shorter when the capture cut the packet.
func parseTCP(data []byte, wire int, s *segment) error {
	if len(data) < 20 {
		return errNotTCP
	}
	off := int(data[12]>>4) * 4
	if off < 20 || len(data) < off || wire < off {
		return errNotTCP
	}
	s.src.port = binary.BigEndian.Uint16(data[0:])
	s.dst.port = binary.BigEndian.Uint16(data[2:])
	s.seq = binary.BigEndian.Uint32(data[4:])
	s.ack = binary.BigEndian.Uint32(data[8:])
	s.flags = data[13]
	s.wireLen = wire - off
	s.payload = data[off:min(len(data), wire)]
	return nil
}
