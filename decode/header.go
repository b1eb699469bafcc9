package decode

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrShortFrame is returned when a frame ends before its header does.
var ErrShortFrame = errors.New("decode: frame shorter than its header")

// RequestHeader is the parsed request header (v0, v1 or v2).
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is nil when the header has no client id (v0) or it is null.
	ClientID *string
	// Len is the header's length in bytes, tag section included; the body
	// starts at frame[Len:].
	Len int
}

// ClientIDString is the client id, or "" when it is null or absent.
func (h *RequestHeader) ClientIDString() string {
	if h.ClientID == nil {
		return ""
	}
	return *h.ClientID
}

// ParseRequestHeader parses the header at the start of a request frame (the
// bytes after the 4-byte size). It needs only the first bytes of the frame:
// the fixed part is 8 bytes, then the client id, then (flexible versions)
// a tag section. An API key kmsg does not know is parsed as header v1.
func ParseRequestHeader(frame []byte) (RequestHeader, error) {
	h, clientID, err := parseRequestHeader(frame)
	if clientID != nil {
		s := string(clientID)
		h.ClientID = &s
	}
	return h, err
}

// parseRequestHeader is ParseRequestHeader leaving ClientID nil: the client
// id is returned as the frame's bytes (nil when absent or null), so that a
// caller can intern it instead of allocating a string per frame.
func parseRequestHeader(frame []byte) (h RequestHeader, clientID []byte, err error) {
	if len(frame) < 8 {
		return h, nil, ErrShortFrame
	}
	h.APIKey = int16(binary.BigEndian.Uint16(frame[0:]))
	h.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	n := 8
	// ControlledShutdown v0 is the one request with header v0: no client id.
	if h.APIKey == int16(kmsg.ControlledShutdown) && h.APIVersion == 0 {
		h.Len = n
		return h, nil, nil
	}
	if len(frame) < n+2 {
		return h, nil, ErrShortFrame
	}
	// The client id stays a non-compact nullable string even in header v2.
	l := int(int16(binary.BigEndian.Uint16(frame[n:])))
	n += 2
	if l >= 0 {
		if len(frame) < n+l {
			return h, nil, ErrShortFrame
		}
		clientID = frame[n : n+l : n+l]
		n += l
	}
	if RequestIsFlexible(h.APIKey, h.APIVersion) {
		m, err := skipTags(frame[n:])
		if err != nil {
			return h, clientID, fmt.Errorf("decode: request header tags: %w", err)
		}
		n += m
	}
	h.Len = n
	return h, clientID, nil
}

// readRequest reads the request of x into req, a kmsg request of x's API
// at no version yet: it checks that x is an exchange of req's API, that
// the request header names the same API and version as x, and that kmsg
// knows that version, then reads the body at that version.
func readRequest(x *Exchange, req kmsg.Request) error {
	key := req.Key()
	name := APIName(key)
	if x == nil || x.APIKey != key {
		return fmt.Errorf("decode: %s request: not a %s exchange", name, name)
	}
	h, err := ParseRequestHeader(x.Request)
	if err != nil {
		return fmt.Errorf("decode: %s request header: %w", name, err)
	}
	if h.APIKey != key || h.APIVersion != x.APIVersion {
		return fmt.Errorf("%w: exchange says %s v%d, request header key %d v%d", ErrMismatch, name, x.APIVersion, h.APIKey, h.APIVersion)
	}
	if h.APIVersion > req.MaxVersion() {
		return errVersion(key, h.APIVersion, req.MaxVersion())
	}
	req.SetVersion(h.APIVersion)
	if err := req.ReadFrom(x.Request[h.Len:]); err != nil {
		return errRequest(key, h.APIVersion, err)
	}
	return nil
}

// RequestIsFlexible reports whether a request of this key and version uses
// the flexible (v2) request header. Unknown keys are not flexible.
func RequestIsFlexible(key, version int16) bool {
	if key < 0 || int(key) >= len(flexibleFrom) {
		return false
	}
	v := flexibleFrom[key]
	return v >= 0 && version >= v
}

// flexibleFrom is, per API key, the first flexible version as kmsg knows
// it, or -1 for keys kmsg does not know or that are never flexible: kmsg's
// IsFlexible is "version >= that one", asked here once per key instead of
// allocating a request per frame.
var flexibleFrom = func() []int16 {
	var from []int16
	for key := int16(0); key < 1000; key++ {
		r := kmsg.RequestForKey(key)
		if r == nil {
			if key > 100 {
				break
			}
			from = append(from, -1)
			continue
		}
		v := int16(-1)
		for ver := r.MaxVersion(); ver >= 0; ver-- {
			r.SetVersion(ver)
			if !r.IsFlexible() {
				break
			}
			v = ver
		}
		from = append(from, v)
	}
	return from
}()

// ResponseHeaderLen returns the length of the response header for a request
// of this key and version, given the response frame: 4 bytes of correlation
// id, plus a tag section when the response is flexible. ApiVersions
// responses always use header v0 so that any client can read them.
func ResponseHeaderLen(key, version int16, frame []byte) (int, error) {
	if len(frame) < 4 {
		return 0, ErrShortFrame
	}
	if key == int16(kmsg.ApiVersions) || !RequestIsFlexible(key, version) {
		return 4, nil
	}
	m, err := skipTags(frame[4:])
	if err != nil {
		return 0, fmt.Errorf("decode: response header tags: %w", err)
	}
	return 4 + m, nil
}

// skipTags returns the length of the tag section at the start of b.
func skipTags(b []byte) (int, error) {
	num, n, err := uvarint(b)
	if err != nil {
		return 0, err
	}
	for i := uint64(0); i < num; i++ {
		_, m, err := uvarint(b[n:])
		if err != nil {
			return 0, err
		}
		n += m
		size, m, err := uvarint(b[n:])
		if err != nil {
			return 0, err
		}
		n += m
		if uint64(len(b)-n) < size {
			return 0, ErrShortFrame
		}
		n += int(size)
	}
	return n, nil
}

func uvarint(b []byte) (uint64, int, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, ErrShortFrame
	}
	return v, n, nil
}
