package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// packetReader reads the packets of one capture, pcap or pcapng.
type packetReader struct {
	name string
	// next reads the next packet: its bytes (valid until the following
	// call), capture info and link type.
	next func() ([]byte, gopacket.CaptureInfo, layers.LinkType, error)
}

// readBuffer is the size of the buffer each capture is read through.
const readBuffer = 1 << 20

// openReader reads the capture format's magic number and returns a reader
// of its packets. name says which capture it is in errors.
func openReader(name string, r io.Reader) (*packetReader, error) {
	br := bufio.NewReaderSize(r, readBuffer)
	magic, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("capture: %s: empty, not a pcap or pcapng capture", name)
		}
		return nil, fmt.Errorf("capture: %s: %w", name, err)
	}
	switch binary.BigEndian.Uint32(magic) {
	case 0x0a0d0d0a: // pcapng section header block
		ng, err := pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true, SkipUnknownVersion: true})
		if err != nil {
			return nil, fmt.Errorf("capture: %s: pcapng: %w", name, err)
		}
		return &packetReader{name: name, next: func() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
			data, ci, err := ng.ZeroCopyReadPacketData()
			if err != nil {
				return nil, ci, 0, err
			}
			lt := ng.LinkType()
			if len(ci.AncillaryData) > 0 {
				if l, ok := ci.AncillaryData[0].(layers.LinkType); ok {
					lt = l
				}
			}
			return data, ci, lt, nil
		}}, nil
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1: // pcap, micro- or nanoseconds, either byte order
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("capture: %s: pcap: %w", name, err)
		}
		lt := pr.LinkType()
		return &packetReader{name: name, next: func() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
			data, ci, err := pr.ZeroCopyReadPacketData()
			return data, ci, lt, err
		}}, nil
	}
	return nil, fmt.Errorf("capture: %s: not a pcap or pcapng capture (magic number %#08x)", name, binary.BigEndian.Uint32(magic))
}

// packet is a packet read, the head of its reader.
type packet struct {
	data []byte
	ci   gopacket.CaptureInfo
	lt   layers.LinkType
	r    *packetReader
}

// merger hands out the packets of several captures in time order, as one
// capture taken at several places would show them. A segment seen twice
// (captured on the client's host and on the broker's) is a retransmission
// to the reassembly, and counted once.
type merger struct {
	// heads holds the next packet of each capture not ended; they are few,
	// so the earliest is found by looking at each.
	heads []packet
	// pending is the reader whose head was handed out last: it reads on at
	// the next call, so that the packet's bytes stay valid until then.
	pending *packetReader
	// err is the first read error of a capture other than its end.
	err error
}

func newMerger(rs []*packetReader) *merger {
	m := &merger{}
	for _, r := range rs {
		m.read(r)
	}
	return m
}

// read reads r's next packet into heads.
func (m *merger) read(r *packetReader) {
	data, ci, lt, err := r.next()
	if err != nil {
		if !errors.Is(err, io.EOF) && m.err == nil {
			m.err = fmt.Errorf("capture: %s: %w", r.name, err)
		}
		return
	}
	m.heads = append(m.heads, packet{data: data, ci: ci, lt: lt, r: r})
}

// next returns the earliest packet of every capture, or io.EOF once they
// all ended. A capture that ends with an error (cut mid-packet) ends there:
// the others are read on, and err says what happened.
func (m *merger) next() (packet, error) {
	if r := m.pending; r != nil {
		m.pending = nil
		m.read(r)
	}
	if len(m.heads) == 0 {
		return packet{}, io.EOF
	}
	first := 0
	for i := 1; i < len(m.heads); i++ {
		if m.heads[i].ci.Timestamp.Before(m.heads[first].ci.Timestamp) {
			first = i
		}
	}
	p := m.heads[first]
	m.heads = append(m.heads[:first], m.heads[first+1:]...)
	m.pending = p.r
	return p, nil
}
