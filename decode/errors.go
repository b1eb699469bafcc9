package decode

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrUnsupportedVersion is returned for a request whose version is above
// the highest one kmsg knows: kmsg would read it with the newest layout it
// knows, which can misparse, so the Decoder refuses it.
var ErrUnsupportedVersion = errors.New("decode: version above the highest kmsg knows")

// ErrMismatch is returned when the exchange's facts disagree with its bytes:
// the response's correlation id is not the request's, or the request header
// is not the API and version the Exchange names.
var ErrMismatch = errors.New("decode: exchange does not match its frames")

// ErrPanic is returned when decoding panicked. It is a last guard: decoding
// bad bytes must return an ordinary error, and the fuzz target fails on it.
var ErrPanic = errors.New("decode: panic while decoding")

// ErrorName is the Kafka name of an error code, such as
// "REBALANCE_IN_PROGRESS" for 27, or "" for 0 (no error). A code franz-go
// does not know renders as "UNKNOWN_ERROR_CODE_<n>".
func ErrorName(code int16) string {
	if code == 0 {
		return ""
	}
	if e := kerr.TypedErrorForCode(code); e != nil && e.Code == code {
		return e.Message
	}
	return fmt.Sprintf("UNKNOWN_ERROR_CODE_%d", code)
}
