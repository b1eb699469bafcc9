//go:build !unix

package proxy

// fdLimit is unknown on systems without RLIMIT_NOFILE.
func fdLimit() (int64, bool) { return 0, false }
