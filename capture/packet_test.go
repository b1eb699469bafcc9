package capture

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// ipPacket serializes an IP packet (IPv4, or IPv6 when v6) carrying a TCP
// segment from port 40000 to 9092, seq 1000, with payload.
func ipPacket(t *testing.T, v6 bool, payload []byte) []byte {
	t.Helper()
	tcp := &layers.TCP{SrcPort: 40000, DstPort: 9092, Seq: 1000, Ack: 7, ACK: true, PSH: true, Window: 100}
	var ip gopacket.SerializableLayer
	if v6 {
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP,
			SrcIP: bytes.Repeat([]byte{0xfd}, 16), DstIP: bytes.Repeat([]byte{0xfe}, 16)}
		tcp.SetNetworkLayerForChecksum(ip6)
		ip = ip6
	} else {
		ip4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: []byte{10, 0, 0, 1}, DstIP: []byte{10, 0, 0, 2}}
		tcp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		ip, tcp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestParseSegment reads a TCP segment under each link type a capture may
// use (tcpdump -i any writes Linux cooked v2), and refuses what is not a
// whole TCP segment.
func TestParseSegment(t *testing.T) {
	payload := []byte("a Kafka frame")
	v4, v6 := ipPacket(t, false, payload), ipPacket(t, true, payload)
	// v6 with a hop-by-hop options header (8 bytes of padding) before TCP.
	v6hop := append([]byte(nil), v6[:40]...)
	v6hop[6] = 0 // next header: hop-by-hop
	binary.BigEndian.PutUint16(v6hop[4:], binary.BigEndian.Uint16(v6[4:])+8)
	v6hop = append(append(v6hop, 6, 0, 1, 4, 0, 0, 0, 0), v6[40:]...)
	macs := bytes.Repeat([]byte{2}, 12)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	sll := make([]byte, 16)
	binary.BigEndian.PutUint16(sll[14:], 0x0800)
	sll2 := make([]byte, 20)
	binary.BigEndian.PutUint16(sll2, 0x86dd)
	frag := append([]byte(nil), v4...)
	frag[6] |= 0x20 // more fragments
	for _, tc := range []struct {
		name string
		lt   layers.LinkType
		data []byte
		v6   bool
		ok   bool
	}{
		{"ethernet", layers.LinkTypeEthernet, cat(macs, []byte{8, 0}, v4), false, true},
		{"ethernet padded", layers.LinkTypeEthernet, cat(macs, []byte{8, 0}, v4, make([]byte, 6)), false, true},
		{"vlan", layers.LinkTypeEthernet, cat(macs, []byte{0x81, 0, 0, 5, 0x86, 0xdd}, v6), true, true},
		{"linux cooked", layers.LinkTypeLinuxSLL, cat(sll, v4), false, true},
		{"linux cooked v2", layers.LinkTypeLinuxSLL2, cat(sll2, v6), true, true},
		{"bsd loopback", layers.LinkTypeNull, cat([]byte{2, 0, 0, 0}, v4), false, true},
		{"raw", layers.LinkTypeRaw, v6hop, true, true},
		{"ipv4 link type", layers.LinkTypeIPv4, v4, false, true},
		{"fragment", layers.LinkTypeRaw, frag, false, false},
		{"udp", layers.LinkTypeRaw, append(append([]byte(nil), v4[:9]...), append([]byte{17}, v4[10:]...)...), false, false},
		{"short", layers.LinkTypeEthernet, cat(macs, []byte{8, 0}, v4[:30]), false, false},
		{"unknown link type", 147, v4, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s segment
			err := parseSegment(tc.lt, tc.data, &s)
			if !tc.ok {
				if err == nil {
					t.Errorf("read as a TCP segment: %+v", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			src := "10.0.0.1:40000"
			if tc.v6 {
				src = "[fdfd:fdfd:fdfd:fdfd:fdfd:fdfd:fdfd:fdfd]:40000"
			}
			if s.src.String() != src || s.dst.port != 9092 || s.seq != 1000 || s.ack != 7 ||
				s.flags != tcpACK|0x08 || !bytes.Equal(s.payload, payload) || s.wireLen != len(payload) {
				t.Errorf("segment %s -> %d seq %d ack %d flags %#x payload %q (wire %d)",
					s.src, s.dst.port, s.seq, s.ack, s.flags, s.payload, s.wireLen)
			}
		})
	}
	// Cut by the snap length: what was captured, and how long it was.
	var s segment
	if err := parseSegment(layers.LinkTypeRaw, v4[:len(v4)-5], &s); err != nil || s.wireLen != len(payload) || len(s.payload) != len(payload)-5 {
		t.Errorf("cut segment: %v, payload %d of %d", err, len(s.payload), s.wireLen)
	}
}
