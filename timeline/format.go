package timeline

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// clock renders a time of day with milliseconds in loc (UTC when nil).
func clock(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format("15:04:05.000")
}

// stamp renders a time for JSON: RFC 3339 with nanoseconds, in UTC, so the
// same instant always gives the same bytes wherever it is rendered.
func stamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// stampPtr is stamp, or nil for the zero time ("unknown" in JSON).
func stampPtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := stamp(t)
	return &s
}

// ms renders a duration in milliseconds rounded to the microsecond.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// msPtr is ms, or nil when known is false.
func msPtr(d time.Duration, known bool) *float64 {
	if !known {
		return nil
	}
	v := ms(d)
	return &v
}

// human renders a duration for people: "850 µs", "8 ms", "8.67 s",
// "5 min 3 s".
func human(d time.Duration) string {
	if d < 0 {
		return "-" + human(-d)
	}
	// The common cases without fmt: durations are rendered for most
	// entries.
	switch {
	case d < time.Millisecond:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + " µs"
	case d < time.Second:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + " ms"
	case d < time.Minute && d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", d/time.Minute, (d%time.Minute)/time.Second)
	default:
		return fmt.Sprintf("%d h %d min", d/time.Hour, (d%time.Hour)/time.Minute)
	}
}

// earliest returns the earlier of two times, ignoring zero times.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
