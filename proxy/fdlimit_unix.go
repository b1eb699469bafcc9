//go:build unix

package proxy

import "syscall"

// fdLimit is the soft limit on open file descriptors, when finite
// (RLIM_INFINITY is all ones, negative as an int64).
func fdLimit() (int64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || int64(r.Cur) < 0 {
		return 0, false
	}
	return int64(r.Cur), true
}
