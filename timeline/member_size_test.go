package timeline

import (
	"testing"
	"unsafe"
)

// TestMemberSize pins the size of a generation's member record, kept for
// every member of every kept generation, and of the member registry's
// record, kept for every member seen in the last forgetAfter, of a
// commit, kept up to a minute and during revocations, and of a
// generation's record, which a frozen generation keeps, and its whole part
// (docs/benchmarks.md, "Memory").
func TestMemberSize(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want uintptr
	}{
		{"member", unsafe.Sizeof(member{}), 192},
		{"liveMember", unsafe.Sizeof(liveMember{}), 144},
		{"commit", unsafe.Sizeof(commit{}), 72},
		{"generation", unsafe.Sizeof(generation{}), 224},
		{"wholeGeneration", unsafe.Sizeof(wholeGeneration{}), 448},
	} {
		if tc.got > tc.want {
			t.Errorf("%s is %d bytes, want at most %d", tc.name, tc.got, tc.want)
		}
	}
}
