package journal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

const readBufSize = 256 << 10

// maxReusedPayload is the largest record payload read into the scanner's
// reused buffer; a larger one gets a buffer of its own.
const maxReusedPayload = 1 << 20

// record is one valid record read from a segment: an exchange, a gap
// (dropped > 0), or a suspension (susp non-nil). Its exchange and payload
// are the scanner's, valid until its next call to next.
type record struct {
	x       *decode.Exchange
	gapAt   time.Time
	dropped uint64
	susp    *suspension
	payload []byte
}

// scanner reads the records of one segment in order. A damaged stretch (bad
// marker, impossible length, checksum mismatch, or a frame running past the
// end) is skipped by scanning for the next sync marker that starts a valid
// record; the stretch counts as one corrupt record, or, when no valid record
// follows it, as the segment's torn tail.
type scanner struct {
	name string
	r    io.ReadSeeker
	size int64 // bytes considered: the size when the segment was opened
	br   *bufio.Reader
	off  int64 // offset of br's next byte
	hdr  segmentHeader

	damagedAt int64 // start of the damage being skipped, or -1

	corrupt   uint64   // damaged stretches skipped, and records that did not parse
	damaged   []Damage // where the first MaxDamageListed of them were
	unknown   uint64   // valid records of a type this version does not know
	tornAt    int64    // offset of the torn tail, or -1
	tornCause string   // what the torn tail looked like
	damage    string   // what the current damage looked like

	// buf holds the payload of a record too large to be read in place, x
	// the exchange of the record last read (whose frames alias the read
	// buffer or buf), and rec that record: reused from record to record.
	buf []byte
	x   decode.Exchange
	rec record
	// certs are the client certificate subjects of the segment's
	// connections, by connection id, as its recClientCert records name
	// them; nil until one does.
	certs map[uint64]string
}

// newScanner reads and checks the header of the segment r of the given
// size. name is used in errors.
func newScanner(name string, r io.ReadSeeker, size int64) (*scanner, error) {
	s := &scanner{name: name, r: r, size: size, br: bufio.NewReaderSize(r, readBufSize), damagedAt: -1, tornAt: -1}
	h, err := readHeader(s.br)
	if err != nil {
		return nil, fmt.Errorf("journal: %s: %w", name, err)
	}
	s.hdr = h
	s.off = int64(h.Len)
	return s, nil
}

// readHeader reads a segment header from the start of br.
func readHeader(br *bufio.Reader) (segmentHeader, error) {
	b, err := br.Peek(headerPeekLen)
	if err != nil && !errors.Is(err, io.EOF) {
		return segmentHeader{}, err
	}
	hl, perr := parseHeaderPrefix(b)
	if perr != nil {
		return segmentHeader{}, perr
	}
	b, err = br.Peek(hl)
	if err != nil && !errors.Is(err, io.EOF) {
		return segmentHeader{}, err
	}
	h, perr := parseHeader(b)
	if perr != nil {
		return segmentHeader{}, perr
	}
	br.Discard(hl)
	return h, nil
}

// next returns the next valid record, or io.EOF at the end of the segment.
// Other errors are I/O errors. The record is the scanner's (rec), valid
// until its next call. An exchange is parsed into into, or into the
// scanner's own (x) when into is nil.
func (s *scanner) next(into *decode.Exchange) (*record, error) {
	if into == nil {
		into = &s.x
	}
	for {
		start := s.off
		left := s.size - start
		if left <= 0 {
			return nil, s.end()
		}
		if left < frameLen {
			if err := s.skip(start, "a record frame cut short"); err != nil {
				return nil, err
			}
			continue
		}
		fh, err := s.br.Peek(frameLen)
		if err != nil {
			return nil, s.ioErr(start, err)
		}
		if [4]byte(fh) != syncMarker {
			if err := s.skip(start, "no sync marker"); err != nil {
				return nil, err
			}
			continue
		}
		n := int64(binary.BigEndian.Uint32(fh[4:]))
		if n == 0 || n > MaxRecordSize {
			if err := s.skip(start, "an impossible record length"); err != nil {
				return nil, err
			}
			continue
		}
		if n > left-frameLen {
			if err := s.skip(start, "a record cut short"); err != nil {
				return nil, err
			}
			continue
		}
		// The checksum covers the length bytes, summed now: reading the
		// payload may refill the buffer fh points into.
		lenSum := crc32.Checksum(fh[4:8], castagnoli)
		sum := binary.BigEndian.Uint32(fh[8:])
		p, err := s.payload(int(n))
		if err != nil {
			return nil, s.ioErr(start, err)
		}
		s.off = start + frameLen + n
		if crc32.Update(lenSum, castagnoli, p) != sum { // frameChecksum
			if err := s.skip(start, "a checksum mismatch"); err != nil {
				return nil, err
			}
			continue
		}
		if s.damagedAt >= 0 {
			s.corrupted(s.damagedAt, start-s.damagedAt, s.damage)
			s.damagedAt = -1
		}
		switch p[0] {
		case recExchange:
			if err := parseExchangeInto(into, p); err != nil {
				s.corrupted(start, s.off-start, "an exchange that did not parse: "+err.Error())
				continue
			}
			into.ClientCert = s.certs[into.ConnID]
			s.rec = record{x: into, payload: p}
			return &s.rec, nil
		case recGap:
			at, d, err := parseGap(p)
			if err != nil {
				s.corrupted(start, s.off-start, "a gap record that did not parse: "+err.Error())
				continue
			}
			s.rec = record{gapAt: at, dropped: d, payload: p}
			return &s.rec, nil
		case recSuspension:
			susp, err := parseSuspension(p)
			if err != nil {
				s.corrupted(start, s.off-start, "a suspension record that did not parse: "+err.Error())
				continue
			}
			s.rec = record{susp: &susp, payload: p}
			return &s.rec, nil
		case recClientCert:
			conn, subject, err := parseClientCert(p)
			if err != nil {
				s.corrupted(start, s.off-start, "a client certificate record that did not parse: "+err.Error())
				continue
			}
			if s.certs == nil {
				s.certs = map[uint64]string{}
			}
			s.certs[conn] = subject
		default:
			s.unknown++
		}
	}
}

// payload reads the n-byte payload of the record whose frame was peeked,
// moving past the record. A record that fits the read buffer is read in
// place, valid until the next read; a larger one is copied out, into the
// reused buf or, above maxReusedPayload, an array of its own.
func (s *scanner) payload(n int) ([]byte, error) {
	if frameLen+n <= s.br.Size() {
		rec, err := s.br.Peek(frameLen + n)
		if err != nil {
			return nil, err
		}
		s.br.Discard(frameLen + n)
		return rec[frameLen:], nil
	}
	s.br.Discard(frameLen)
	var p []byte
	switch {
	case n > maxReusedPayload:
		p = make([]byte, n) // rare: not kept for the next records
	case cap(s.buf) < n:
		s.buf = make([]byte, n)
		fallthrough
	default:
		p = s.buf[:n]
	}
	if _, err := io.ReadFull(s.br, p); err != nil {
		return nil, err
	}
	return p, nil
}

// corrupted counts a corrupt record of n bytes at offset at, and lists it
// while fewer than MaxDamageListed are.
func (s *scanner) corrupted(at, n int64, cause string) {
	s.corrupt++
	if len(s.damaged) < MaxDamageListed {
		s.damaged = append(s.damaged, Damage{Path: s.name, Offset: at, Bytes: n, Cause: cause})
	}
}

// skip marks damage starting at start (unless already inside damage) and
// moves to the next sync marker after start.
func (s *scanner) skip(start int64, why string) error {
	if s.damagedAt < 0 {
		s.damagedAt = start
		s.damage = why
	}
	return s.resync(start + 1)
}

// resync positions the scanner on the next sync marker at or after from, or
// at the end of the segment when there is none.
func (s *scanner) resync(from int64) error {
	if _, err := s.r.Seek(from, io.SeekStart); err != nil {
		return fmt.Errorf("journal: %s: seek to %d: %w", s.name, from, err)
	}
	s.br.Reset(s.r)
	s.off = from
	for s.size-s.off >= int64(len(syncMarker)) {
		want := int(min(int64(s.br.Size()), s.size-s.off))
		buf, err := s.br.Peek(want)
		if i := bytes.Index(buf, syncMarker[:]); i >= 0 {
			s.br.Discard(i)
			s.off += int64(i)
			return nil
		}
		if err != nil {
			return s.ioErr(s.off, err)
		}
		// Keep the last bytes: a marker may straddle the window's end.
		k := len(buf) - (len(syncMarker) - 1)
		s.br.Discard(k)
		s.off += int64(k)
	}
	s.off = s.size
	return nil
}

// end reports the end of the segment, turning damage that runs to the end
// into the torn tail.
func (s *scanner) end() error {
	if s.damagedAt >= 0 {
		s.tornAt, s.tornCause = s.damagedAt, s.damage
		s.damagedAt = -1
	}
	return io.EOF
}

// ioErr wraps a read error. A segment that shrank while being read ends
// there, as a torn tail.
func (s *scanner) ioErr(at int64, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if s.damagedAt < 0 {
			s.damagedAt, s.damage = at, "the file shrank while being read"
		}
		s.size = at
		return s.end()
	}
	return fmt.Errorf("journal: read %s at offset %d: %w", s.name, at, err)
}
