//go:build kproxy_nofetchobserve

package proxy

// observeRequestOnly is off in this build: Fetch requests are streamed and
// not observed, for the load harness's comparison (observefetch.go).
const observeRequestOnly = false
