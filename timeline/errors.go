package timeline

import "github.com/kproxy-dev/kproxy/decode"

// Kafka error codes the engine reasons about.
const (
	errIllegalGeneration   int16 = 22
	errUnknownMemberID     int16 = 25
	errRebalanceInProgress int16 = 27
	errMemberIDRequired    int16 = 79
	errFencedInstanceID    int16 = 82
	errFencedMemberEpoch   int16 = 110
	errStaleMemberEpoch    int16 = 113
)

// errorName names a Kafka error code, "" for 0 (decode.ErrorName).
func errorName(code int16) string { return decode.ErrorName(code) }
