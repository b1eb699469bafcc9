package unixnano

import (
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	tests := []time.Time{
		{},
		time.Unix(0, 1),
		time.Date(2026, 12, 5, 16, 30, 0, 123456789, time.UTC),
		time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC),
	}
	for _, want := range tests {
		n := Of(want)
		if want.IsZero() != (n == 0) {
			t.Errorf("Of(%v) = %d: zero only for the zero time", want, n)
		}
		if got := Time(n); !got.Equal(want) || got.IsZero() != want.IsZero() {
			t.Errorf("Time(Of(%v)) = %v", want, got)
		}
	}
}
