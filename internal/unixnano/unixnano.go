// Package unixnano keeps times as Unix nanoseconds: 8 bytes where a
// time.Time takes 24, for what the story keeps of many members and what
// the journal writes of every exchange. The zero time is 0.
package unixnano

import "time"

// Of is t in Unix nanoseconds, 0 for the zero time.
func Of(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Time is the time of Unix nanoseconds n in the local time zone, as
// time.Unix gives it and as events' times are; the zero time for 0.
// Events carry no monotonic clock reading (the proxy and the journal drop
// it), so a time kept this way compares with them as before.
func Time(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
