package timeline

import (
	"testing"
	"unsafe"
)

// TestMemberSize pins the size of a generation's member record, kept for
// every member of every kept generation, and of the member registry's
// record, kept for every member seen in the last forgetAfter, and of a
// commit, kept up to a minute and during revocations (docs/benchmarks.md,
// "Memory").
func TestMemberSize(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want uintptr
	}{
		{"member", unsafe.Sizeof(member{}), 240},
		{"liveMember", unsafe.Sizeof(liveMember{}), 144},
		{"commit", unsafe.Sizeof(commit{}), 88},
	} {
		if tc.got > tc.want {
			t.Errorf("%s is %d bytes, want at most %d", tc.name, tc.got, tc.want)
		}
	}
}
