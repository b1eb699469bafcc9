package proxy

import "testing"

// TestLogOnceBounded: a client cycling through api versions (the fuzz
// against the real broker logged 4,499 once-lines in 10 minutes, one per
// new version, and kept each) gets at most maxLogOnce lines, and the set
// stops growing.
func TestLogOnceBounded(t *testing.T) {
	var o logOnce
	logged := 0
	for v := range 5 * maxLogOnce {
		if o.first("unobservable", int16(11), int16(v)) {
			logged++
		}
	}
	if logged != maxLogOnce || len(o.seen) != maxLogOnce {
		t.Errorf("%d lines logged, %d problems kept; want %d of each", logged, len(o.seen), maxLogOnce)
	}
	if o.first("unobservable", int16(11), int16(0)) {
		t.Error("a problem seen before logged again")
	}
}
