//go:build !kproxy_nofetchobserve

package proxy

// observeRequestOnly is whether the requests of request-only APIs (Fetch)
// are read whole and handed to the pipeline. Only a build for the load
// harness turns it off (-tags kproxy_nofetchobserve), to measure what
// observing Fetch requests costs (issue 12 allows 2% of throughput).
const observeRequestOnly = true
