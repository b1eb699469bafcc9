// Package saturate adds counts read from files and topics that anyone may
// have written: a sum that would pass the largest uint64 stays there
// instead of wrapping to a small number.
package saturate

import "math/bits"

// Add returns a+b, or the largest uint64 when the sum does not fit.
func Add(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}
