package pipeline

import "github.com/kproxy-dev/kproxy/decode"

// DecodedConsumer receives each exchange with what the pipeline decoded
// from it: its group events, and the requests that yield no events but
// say where a consumer reads (Fetch) and what it runs (ApiVersions). The
// diagnosis is one. It must keep neither the exchange nor the events.
type DecodedConsumer interface {
	AddDecoded(d *decode.Decoded)
}
