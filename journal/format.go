package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/unixnano"
)

// FormatVersion is the segment format version this package writes and the
// newest it reads.
const FormatVersion = 1

// MaxRecordSize is the largest record payload a segment may hold. The
// writer drops (and counts) a larger exchange; the reader treats a larger
// length as damage.
const MaxRecordSize = 64 << 20

// magic opens every segment. Like PNG's signature, the high-bit first byte
// and the CR LF, SUB, LF tail reveal 7-bit and line-ending mangling.
var magic = [8]byte{0x89, 'K', 'P', 'J', '\r', '\n', 0x1a, '\n'}

// syncMarker opens every record; after damage, a reader scans for it.
var syncMarker = [4]byte{0xe2, 0x9c, 0x5b, 0xa7}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header layout (version 1), big-endian; see docs/journal-format.md.
const (
	headerFixedLen = 46   // magic .. version string length
	headerMinLen   = 50   // fixed part + CRC, empty version string
	headerMaxLen   = 4096 // bound on the header length field
	maxVersionLen  = 1024
	// headerPeekLen covers magic, format version and header length: the
	// part every future version must keep in place.
	headerPeekLen = 12
)

// frameLen is the record frame before the payload: marker, length, CRC.
const frameLen = 12

// Record types, the first payload byte.
const (
	recExchange = 1 // one decode.Exchange
	recGap      = 2 // exchanges dropped before this point
	// recSuspension says why the gap before it was lost: a write error
	// had journaling suspended. Older readers skip it as an unknown type
	// and still count the gap.
	recSuspension = 3
	// recClientCert names the certificate a client presented on one
	// connection (mutual TLS): the exchanges of that connection after it
	// in the same segment carry it (decode.Exchange.ClientCert). The
	// writer puts one before a connection's first exchange in each
	// segment. Older readers skip it as an unknown type and read the
	// exchanges without it.
	recClientCert = 4
)

// Exchange record flags.
const (
	flagRequest   = 1 << 0 // Request is non-nil
	flagResponse  = 1 << 1 // Response is non-nil
	flagOversized = 1 << 2 // Oversized: a frame too large to observe is left out
	knownFlags    = flagRequest | flagResponse | flagOversized
)

// exchangeFixedLen is the exchange payload up to the client address.
const exchangeFixedLen = 38

// gapLen is the whole gap payload.
const gapLen = 17

// clientCertFixedLen is the client certificate payload up to its subject,
// which is at most maxClientCert bytes.
const (
	clientCertFixedLen = 11
	maxClientCert      = 4096
)

// suspensionFixedLen is the suspension payload up to its error message,
// which is at most maxSuspensionErr bytes.
const (
	suspensionFixedLen = 27
	maxSuspensionErr   = 1024
)

// segmentHeader is what a segment's header says about it.
type segmentHeader struct {
	// Version is the segment's format version.
	Version uint16
	// Created is when the writer created the segment.
	Created time.Time
	// JournalID identifies the Writer that wrote the segment; all segments
	// of one journal share it.
	JournalID [16]byte
	// Seq numbers the segments of one journal from 1.
	Seq uint64
	// KproxyVersion is the version string of the kproxy that wrote it.
	KproxyVersion string
	// Len is the header's length in bytes: the first record starts there.
	Len int
}

// appendHeader appends h's encoding to dst.
func appendHeader(dst []byte, h *segmentHeader) []byte {
	v := h.KproxyVersion
	if len(v) > maxVersionLen {
		v = v[:maxVersionLen]
	}
	start := len(dst)
	dst = append(dst, magic[:]...)
	dst = binary.BigEndian.AppendUint16(dst, FormatVersion)
	dst = binary.BigEndian.AppendUint16(dst, uint16(headerMinLen+len(v)))
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixnano.Of(h.Created)))
	dst = append(dst, h.JournalID[:]...)
	dst = binary.BigEndian.AppendUint64(dst, h.Seq)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(v)))
	dst = append(dst, v...)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// Header errors. Callers tell them apart with errors.Is; the reader wraps
// them with the file's path.
var (
	// ErrEmptyFile is a zero-length segment file.
	ErrEmptyFile = errors.New("empty file, not a journal segment")
	// ErrNotJournal is a file that does not start with the segment magic.
	ErrNotJournal = errors.New("not a kproxy journal segment (bad magic)")
	// ErrTruncatedHeader is a file that ends inside its header.
	ErrTruncatedHeader = errors.New("truncated segment header")
	// ErrBadHeader is a header whose checksum or fields are wrong.
	ErrBadHeader = errors.New("corrupt segment header")
)

// VersionError is a segment written in a format version this package does
// not know, by a newer kproxy.
type VersionError struct {
	Version uint16
}

// Error says which format version the segment has, which this kproxy reads
// up to, and to upgrade.
func (e *VersionError) Error() string {
	return fmt.Sprintf("segment format version %d is newer than this kproxy reads (up to %d); upgrade kproxy to read it",
		e.Version, FormatVersion)
}

// parseHeaderPrefix checks the first headerPeekLen bytes and returns the
// header's total length.
func parseHeaderPrefix(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, ErrEmptyFile
	}
	// A prefix of the magic is a header cut short, anything else is not ours.
	n := min(len(b), len(magic))
	if string(b[:n]) != string(magic[:n]) {
		return 0, ErrNotJournal
	}
	if len(b) < headerPeekLen {
		return 0, ErrTruncatedHeader
	}
	if v := binary.BigEndian.Uint16(b[8:]); v != FormatVersion {
		if v > FormatVersion {
			return 0, &VersionError{Version: v}
		}
		return 0, ErrBadHeader // version 0 was never written
	}
	hl := int(binary.BigEndian.Uint16(b[10:]))
	if hl < headerMinLen || hl > headerMaxLen {
		return 0, ErrBadHeader
	}
	return hl, nil
}

// parseHeader parses a whole header of the length parseHeaderPrefix gave.
func parseHeader(b []byte) (segmentHeader, error) {
	var h segmentHeader
	hl, err := parseHeaderPrefix(b)
	if err != nil {
		return h, err
	}
	if len(b) < hl {
		return h, ErrTruncatedHeader
	}
	b = b[:hl]
	if crc32.Checksum(b[:hl-4], castagnoli) != binary.BigEndian.Uint32(b[hl-4:]) {
		return h, ErrBadHeader
	}
	vl := int(binary.BigEndian.Uint16(b[44:]))
	// Bytes between the version string and the CRC are reserved for
	// additions an older reader may skip.
	if headerFixedLen+vl > hl-4 {
		return h, ErrBadHeader
	}
	h.Version = binary.BigEndian.Uint16(b[8:])
	h.Created = unixnano.Time(int64(binary.BigEndian.Uint64(b[12:])))
	copy(h.JournalID[:], b[20:36])
	h.Seq = binary.BigEndian.Uint64(b[36:])
	h.KproxyVersion = string(b[headerFixedLen : headerFixedLen+vl])
	h.Len = hl
	return h, nil
}

// exchangePayloadLen is the payload length of x's record.
func exchangePayloadLen(x *decode.Exchange) int {
	return exchangeFixedLen + 2 + len(x.ClientAddr) + 2 + len(x.ClientID) +
		4 + len(x.Request) + 4 + len(x.Response)
}

// appendExchange appends x's payload to dst. Strings longer than 65535
// bytes (which no client address or Kafka client id is) are cut.
func appendExchange(dst []byte, x *decode.Exchange) []byte {
	var flags byte
	if x.Request != nil {
		flags |= flagRequest
	}
	if x.Response != nil {
		flags |= flagResponse
	}
	if x.Oversized {
		flags |= flagOversized
	}
	dst = append(dst, recExchange, flags)
	dst = binary.BigEndian.AppendUint64(dst, x.ConnID)
	dst = binary.BigEndian.AppendUint32(dst, uint32(x.BrokerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(x.APIKey))
	dst = binary.BigEndian.AppendUint16(dst, uint16(x.APIVersion))
	dst = binary.BigEndian.AppendUint32(dst, uint32(x.CorrelationID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixnano.Of(x.RequestAt)))
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixnano.Of(x.ResponseAt)))
	dst = appendString16(dst, x.ClientAddr)
	dst = appendString16(dst, x.ClientID)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(x.Request)))
	dst = append(dst, x.Request...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(x.Response)))
	return append(dst, x.Response...)
}

func appendString16(dst []byte, s string) []byte {
	if len(s) > 0xffff {
		s = s[:0xffff]
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

// appendGap appends a gap payload: n exchanges dropped, noted at t.
func appendGap(dst []byte, t time.Time, n uint64) []byte {
	dst = append(dst, recGap)
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixnano.Of(t)))
	return binary.BigEndian.AppendUint64(dst, n)
}

// suspension is what a suspension record says: a write error (Err) had
// journaling suspended from Since until At, and Lost exchanges were lost
// meanwhile, the count of the gap record written just before it.
type suspension struct {
	At, Since time.Time
	Lost      uint64
	Err       string
}

// appendSuspension appends s's payload to dst, its error cut to
// maxSuspensionErr bytes.
func appendSuspension(dst []byte, s suspension) []byte {
	dst = append(dst, recSuspension)
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixnano.Of(s.At)))
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixnano.Of(s.Since)))
	dst = binary.BigEndian.AppendUint64(dst, s.Lost)
	msg := s.Err
	if len(msg) > maxSuspensionErr {
		msg = msg[:maxSuspensionErr]
	}
	return appendString16(dst, msg)
}

// parseSuspension parses a suspension payload.
func parseSuspension(p []byte) (suspension, error) {
	if len(p) < suspensionFixedLen || p[0] != recSuspension {
		return suspension{}, errPayload
	}
	msg, rest, ok := field16(p[suspensionFixedLen-2:])
	if !ok || len(rest) != 0 || len(msg) > maxSuspensionErr {
		return suspension{}, errPayload
	}
	return suspension{
		At:    unixnano.Time(int64(binary.BigEndian.Uint64(p[1:]))),
		Since: unixnano.Time(int64(binary.BigEndian.Uint64(p[9:]))),
		Lost:  binary.BigEndian.Uint64(p[17:]),
		Err:   string(msg),
	}, nil
}

// appendClientCert appends the payload naming the client certificate
// subject of connection conn, cut to maxClientCert bytes.
func appendClientCert(dst []byte, conn uint64, subject string) []byte {
	if len(subject) > maxClientCert {
		subject = subject[:maxClientCert]
	}
	dst = append(dst, recClientCert)
	dst = binary.BigEndian.AppendUint64(dst, conn)
	return appendString16(dst, subject)
}

// clientCertFrameLen is the whole frame of the client certificate record
// of x's connection.
func clientCertFrameLen(x *decode.Exchange) int {
	return frameLen + clientCertFixedLen + min(len(x.ClientCert), maxClientCert)
}

// parseClientCert parses a client certificate payload.
func parseClientCert(p []byte) (conn uint64, subject string, err error) {
	if len(p) < clientCertFixedLen || p[0] != recClientCert {
		return 0, "", errPayload
	}
	v, rest, ok := field16(p[clientCertFixedLen-2:])
	if !ok || len(rest) != 0 || len(v) == 0 || len(v) > maxClientCert {
		return 0, "", errPayload
	}
	return binary.BigEndian.Uint64(p[1:]), string(v), nil
}

// errPayload is a record whose checksum is right but whose payload does not
// parse: written by a broken writer, or a newer one.
var errPayload = errors.New("malformed record payload")

// parseExchange parses an exchange payload. Request and Response alias p.
func parseExchange(p []byte) (*decode.Exchange, error) {
	x := &decode.Exchange{}
	if err := parseExchangeInto(x, p); err != nil {
		return nil, err
	}
	return x, nil
}

// parseExchangeInto is parseExchange into x, every field of which it sets
// when it succeeds; when it fails, x is as it was. It sets them one by
// one: a whole Exchange built and then copied into x would be loaded right
// after its fields were stored, and the loads would wait for the stores (a
// store-to-load forwarding stall).
func parseExchangeInto(x *decode.Exchange, p []byte) error {
	if len(p) < exchangeFixedLen || p[0] != recExchange || p[1]&^knownFlags != 0 {
		return errPayload
	}
	flags := p[1]
	b := p[exchangeFixedLen:]
	addr, b, ok1 := field16(b)
	id, b, ok2 := field16(b)
	strs := len(p) - len(b) // the end of the client id
	req, b, ok3 := field32(b, flags&flagRequest != 0)
	resp, b, ok4 := field32(b, flags&flagResponse != 0)
	if !ok1 || !ok2 || !ok3 || !ok4 || len(b) != 0 {
		return errPayload
	}
	x.Oversized = flags&flagOversized != 0
	x.ClientCert = "" // a connection fact of its own record (recClientCert)
	x.ConnID = binary.BigEndian.Uint64(p[2:])
	x.BrokerID = int32(binary.BigEndian.Uint32(p[10:]))
	x.APIKey = int16(binary.BigEndian.Uint16(p[14:]))
	x.APIVersion = int16(binary.BigEndian.Uint16(p[16:]))
	x.CorrelationID = int32(binary.BigEndian.Uint32(p[18:]))
	x.RequestAt = unixnano.Time(int64(binary.BigEndian.Uint64(p[22:])))
	x.ResponseAt = unixnano.Time(int64(binary.BigEndian.Uint64(p[30:])))
	// Fresh strings, both in one allocation: the payload's bytes from the
	// address to the end of the client id (the id's length field between
	// them is unused). Sharing them through a table of the strings seen
	// (connections, clients) cost more in cache misses than it saved in
	// allocations once a journal has thousands of connections.
	both := string(p[strs-len(id)-2-len(addr) : strs])
	x.ClientAddr = both[:len(addr)]
	x.ClientID = both[len(both)-len(id):]
	x.Request = req
	x.Response = resp
	return nil
}

// parseGap parses a gap payload.
func parseGap(p []byte) (time.Time, uint64, error) {
	if len(p) != gapLen || p[0] != recGap {
		return time.Time{}, 0, errPayload
	}
	return unixnano.Time(int64(binary.BigEndian.Uint64(p[1:]))), binary.BigEndian.Uint64(p[9:]), nil
}

// field16 reads a field of a 16-bit length and that many bytes from the
// start of b, returning it and the rest of b; ok is false when b is too
// short. (Small enough to be inlined, unlike a reader type's methods, which
// were a sixth of the read stage.)
func field16(b []byte) (v, rest []byte, ok bool) {
	if len(b) < 2 {
		return nil, b, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b)-2 < n {
		return nil, b, false
	}
	return b[2 : 2+n : 2+n], b[2+n:], true
}

// field32 is field16 with a 32-bit length, for a field that may be nil:
// present false means it was, and its length must be 0.
func field32(b []byte, present bool) (v, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, b, false
	}
	n := uint64(binary.BigEndian.Uint32(b))
	if !present || uint64(len(b)-4) < n {
		return nil, b[4:], !present && n == 0
	}
	return b[4 : 4+n : 4+n], b[4+n:], true
}

// frameChecksum is the CRC32C stored in a record frame: over the 4 length
// bytes, then the payload.
func frameChecksum(lenBytes, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(lenBytes, castagnoli), castagnoli, payload)
}
