package timeline

import (
	"testing"
	"unsafe"
)

// TestMemberSize pins the size of a generation's member record, kept for
// every member of every kept generation (docs/benchmarks.md, "Memory").
func TestMemberSize(t *testing.T) {
	if got := unsafe.Sizeof(member{}); got > 240 {
		t.Errorf("member is %d bytes, want at most 240", got)
	}
}
