package timeline

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

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

// errorName names a Kafka error code: "" for 0, "REBALANCE_IN_PROGRESS" for
// 27, "ERROR_<code>" for a code kerr does not know.
// TODO(timeline): switch to decode.ErrorName once it is committed.
func errorName(code int16) string {
	if code == 0 {
		return ""
	}
	err := kerr.TypedErrorForCode(code)
	if err == kerr.UnknownServerError && code != kerr.UnknownServerError.Code {
		return "ERROR_" + strconv.Itoa(int(code))
	}
	return err.Message
}
