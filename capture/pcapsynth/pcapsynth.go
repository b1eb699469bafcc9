// Package pcapsynth writes packet captures of Kafka traffic that was never on
// a wire: the TCP segments that connections carrying given exchanges would
// have carried, as tcpdump would have captured them. The capture package's
// tests, its benchmark and kproxy's replay tests read them; a test mangles
// the segments (drops, duplicates, reorders, cuts them) through Mangle.
package pcapsynth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/journal"
)

// Format is the capture format written.
type Format int

const (
	// Pcap is the classic format, nanosecond timestamps.
	Pcap Format = iota
	// PcapNG is the next-generation format.
	PcapNG
)

// Packet is one TCP segment of a connection, before it is written.
type Packet struct {
	At         time.Time
	Conn       *Conn
	FromClient bool
	Seq, Ack   uint32
	Flags      Flags
	Payload    []byte
	// WireLen, when longer than Payload, is the segment's length on the
	// wire: the capture's snap length cut the rest.
	WireLen int
}

// Flags are TCP flags.
type Flags uint8

// TCP flags.
const (
	FIN Flags = 0x01
	SYN Flags = 0x02
	RST Flags = 0x04
	PSH Flags = 0x08
	ACK Flags = 0x10
)

// Conn is one TCP connection between a client and a broker.
type Conn struct {
	Client, Broker netip.AddrPort
	// clientSeq and brokerSeq are the next sequence numbers of each side.
	clientSeq, brokerSeq uint32
}

// Writer writes the packets of connections, in the order they are given:
// the caller gives them in time order.
type Writer struct {
	// MSS is the largest payload of a segment (default 65483, loopback's).
	MSS int
	// Acks makes the receiver of each write acknowledge it with a
	// segment of its own, as TCP does.
	Acks bool
	// Mangle, when set, is given the packets of each write, connection
	// opening and closing and returns the packets to write instead.
	Mangle func([]Packet) []Packet

	pcap  *pcapgo.Writer
	ng    *pcapgo.NgWriter
	buf   gopacket.SerializeBuffer
	count int
}

// NewWriter writes a capture's header to w.
func NewWriter(w io.Writer, f Format) (*Writer, error) {
	sw := &Writer{MSS: 65483, buf: gopacket.NewSerializeBuffer()}
	switch f {
	case PcapNG:
		ng, err := pcapgo.NewNgWriter(w, layers.LinkTypeEthernet)
		if err != nil {
			return nil, fmt.Errorf("synth: %w", err)
		}
		sw.ng = ng
	default:
		sw.pcap = pcapgo.NewWriterNanos(w)
		if err := sw.pcap.WriteFileHeader(262144, layers.LinkTypeEthernet); err != nil {
			return nil, fmt.Errorf("synth: %w", err)
		}
	}
	return sw, nil
}

// Flush writes what a pcapng writer buffers.
func (w *Writer) Flush() error {
	if w.ng != nil {
		return w.ng.Flush()
	}
	return nil
}

// Packets is how many packets were written.
func (w *Writer) Packets() int { return w.count }

// NewConn returns a connection between client and broker, not opened:
// Open writes its handshake; without it the capture begins mid-session.
func NewConn(client, broker netip.AddrPort, isn uint32) *Conn {
	return &Conn{Client: client, Broker: broker, clientSeq: isn, brokerSeq: isn ^ 0x5a5a5a5a}
}

// Open writes c's three-way handshake at at.
func (w *Writer) Open(c *Conn, at time.Time) error {
	ps := []Packet{
		{At: at, Conn: c, FromClient: true, Seq: c.clientSeq - 1, Flags: SYN},
		{At: at, Conn: c, Seq: c.brokerSeq - 1, Ack: c.clientSeq, Flags: SYN | ACK},
		{At: at, Conn: c, FromClient: true, Seq: c.clientSeq, Ack: c.brokerSeq, Flags: ACK},
	}
	return w.write(ps)
}

// Close writes c's closing at at, both sides sending FIN.
func (w *Writer) Close(c *Conn, at time.Time) error {
	ps := []Packet{
		{At: at, Conn: c, FromClient: true, Seq: c.clientSeq, Ack: c.brokerSeq, Flags: FIN | ACK},
		{At: at, Conn: c, Seq: c.brokerSeq, Ack: c.clientSeq + 1, Flags: FIN | ACK},
		{At: at, Conn: c, FromClient: true, Seq: c.clientSeq + 1, Ack: c.brokerSeq + 1, Flags: ACK},
	}
	c.clientSeq++
	c.brokerSeq++
	return w.write(ps)
}

// Send writes data sent by one side of c at at, in segments of at most
// MSS bytes.
func (w *Writer) Send(c *Conn, fromClient bool, data []byte, at time.Time) error {
	seq, ack := &c.brokerSeq, c.clientSeq
	if fromClient {
		seq, ack = &c.clientSeq, c.brokerSeq
	}
	var ps []Packet
	for len(data) > 0 {
		n := min(len(data), w.MSS)
		ps = append(ps, Packet{At: at, Conn: c, FromClient: fromClient, Seq: *seq, Ack: ack, Flags: ACK | PSH, Payload: data[:n]})
		*seq += uint32(n)
		data = data[n:]
	}
	if w.Acks && len(ps) > 0 {
		ps = append(ps, Packet{At: at, Conn: c, FromClient: !fromClient, Seq: ack, Ack: *seq, Flags: ACK})
	}
	return w.write(ps)
}

// Write writes packets as given (mangled when Mangle is set).
func (w *Writer) Write(ps ...Packet) error { return w.write(ps) }

// write writes ps, mangled.
func (w *Writer) write(ps []Packet) error {
	if w.Mangle != nil {
		ps = w.Mangle(ps)
	}
	for _, p := range ps {
		if err := w.writePacket(p); err != nil {
			return err
		}
	}
	return nil
}

// writePacket writes one segment in an Ethernet frame.
func (w *Writer) writePacket(p Packet) error {
	src, dst := p.Conn.Client, p.Conn.Broker
	if !p.FromClient {
		src, dst = dst, src
	}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()),
		Seq: p.Seq, Ack: p.Ack, Window: 65535,
		FIN: p.Flags&FIN != 0, SYN: p.Flags&SYN != 0, RST: p.Flags&RST != 0, PSH: p.Flags&PSH != 0, ACK: p.Flags&ACK != 0}
	eth := &layers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0, 1}, DstMAC: []byte{2, 0, 0, 0, 0, 2}}
	var ip gopacket.SerializableLayer
	if src.Addr().Is4() {
		eth.EthernetType = layers.EthernetTypeIPv4
		ip4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP,
			SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
		tcp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP,
			SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
		tcp.SetNetworkLayerForChecksum(ip6)
		ip = ip6
	}
	if err := gopacket.SerializeLayers(w.buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, tcp, gopacket.Payload(p.Payload)); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	data := w.buf.Bytes()
	wire := len(data)
	if p.WireLen > len(p.Payload) {
		// Cut by the snap length: the headers say how long it was, and
		// what was captured of it ends with the payload kept (no
		// Ethernet padding after it).
		data = data[:14+ipTCPLen(data)]
		extra := p.WireLen - len(p.Payload)
		wire += extra
		fixLengths(data, extra)
	}
	ci := gopacket.CaptureInfo{Timestamp: p.At, CaptureLength: len(data), Length: wire}
	w.count++
	if w.ng != nil {
		return w.ng.WritePacket(ci, data)
	}
	return w.pcap.WritePacket(ci, data)
}

// ipTCPLen is the length of an Ethernet frame after its header, up to
// the end of its TCP payload: what its IP header says.
func ipTCPLen(frame []byte) int {
	ip := frame[14:]
	if ip[0]>>4 == 4 {
		return int(binary.BigEndian.Uint16(ip[2:]))
	}
	return 40 + int(binary.BigEndian.Uint16(ip[4:]))
}

// fixLengths adds extra to the IP length fields of an Ethernet frame, as
// for a packet whose last extra bytes the capture cut.
func fixLengths(frame []byte, extra int) {
	ip := frame[14:]
	if ip[0]>>4 == 4 {
		binary.BigEndian.PutUint16(ip[2:], binary.BigEndian.Uint16(ip[2:])+uint16(extra))
		return
	}
	binary.BigEndian.PutUint16(ip[4:], binary.BigEndian.Uint16(ip[4:])+uint16(extra))
}

// ExchangeOptions say how WriteExchanges lays exchanges out.
type ExchangeOptions struct {
	// BrokerPort is the brokers' port (default 9092); broker node N
	// listens on 127.0.0.(N+2) (the bootstrap, -1, on 127.0.0.1), on
	// NodePorts[N] when set.
	BrokerPort uint16
	NodePorts  map[int32]uint16
	// MidSession leaves out the handshakes: the capture begins after the
	// connections were opened.
	MidSession bool
	// NoClose leaves connections open at the end.
	NoClose bool
}

// WriteExchanges writes the packets of the connections that carried xs
// (exchanges as a journal holds them): each connection opened before its
// first request, each request's frame sent at its RequestAt and each
// response's at its ResponseAt, and each connection closed after its last
// response. An exchange without a response (Fetch, whose response the
// proxy never keeps, or an unanswered request) gets none.
func WriteExchanges(w *Writer, xs []*decode.Exchange, o ExchangeOptions) error {
	if o.BrokerPort == 0 {
		o.BrokerPort = 9092
	}
	type event struct {
		at   time.Time
		conn uint64
		kind int // 0 open, 1 request, 2 response, 3 close
		data []byte
		n    int // order of creation (open, request, response, close), for equal times
	}
	var evs []event
	add := func(at time.Time, conn uint64, kind int, data []byte) {
		evs = append(evs, event{at: at, conn: conn, kind: kind, data: data, n: len(evs)})
	}
	conns := map[uint64]*Conn{}
	last := map[uint64]time.Time{}
	for _, x := range xs {
		if conns[x.ConnID] == nil {
			client, err := netip.ParseAddrPort(x.ClientAddr)
			if err != nil {
				return fmt.Errorf("synth: exchange of connection %d: client address %q: %w", x.ConnID, x.ClientAddr, err)
			}
			port := o.BrokerPort
			if p, ok := o.NodePorts[x.BrokerID]; ok {
				port = p
			}
			broker := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(x.BrokerID + 2)}), port)
			conns[x.ConnID] = NewConn(client, broker, uint32(x.ConnID)*1_000_003)
			add(x.RequestAt, x.ConnID, 0, nil)
		}
		add(x.RequestAt, x.ConnID, 1, frame(x.Request))
		end := x.RequestAt
		if x.Response != nil {
			add(x.ResponseAt, x.ConnID, 2, frame(x.Response))
			end = x.ResponseAt
		}
		if end.After(last[x.ConnID]) {
			last[x.ConnID] = end
		}
	}
	if !o.NoClose {
		for id, at := range last {
			add(at, id, 3, nil)
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.n - b.n
	})
	for _, e := range evs {
		c := conns[e.conn]
		var err error
		switch e.kind {
		case 0:
			if !o.MidSession {
				err = w.Open(c, e.at)
			}
		case 1, 2:
			err = w.Send(c, e.kind == 1, e.data, e.at)
		case 3:
			err = w.Close(c, e.at)
		}
		if err != nil {
			return err
		}
	}
	return w.Flush()
}

// frame is b with its 4-byte size before it.
func frame(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b))), b...)
}

// ReadJournal returns the exchanges of the journals at paths, in the
// order a replay reads them, each its own copy: for captures of small
// journals (every exchange is held).
func ReadJournal(paths ...string) ([]*decode.Exchange, error) {
	r, err := journal.OpenReader(paths...)
	if err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	defer r.Close()
	var xs []*decode.Exchange
	for {
		var x decode.Exchange
		err := r.NextInto(&x)
		if errors.Is(err, io.EOF) {
			return xs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("synth: %w", err)
		}
		x.Request, x.Response = bytes.Clone(x.Request), bytes.Clone(x.Response)
		xs = append(xs, &x)
	}
}
