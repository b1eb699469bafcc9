package pipeline

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// DecodedConsumer receives each exchange with what the pipeline decoded
// from it: its group events, and the requests that yield no events but
// say where a consumer reads (Fetch) and what it runs (ApiVersions). The
// diagnosis is one. It must keep neither the exchange nor the events.
type DecodedConsumer interface {
	AddDecoded(d *Decoded)
}

// Decoded is one exchange as the pipeline decoded it.
type Decoded struct {
	// X is the exchange; nil when the events came without one (tests of
	// synthetic events).
	X *decode.Exchange
	// Events are the group events decoded from X.
	Events []decode.Event
	// Fetch is a Fetch request (key 1, handed out without its response)
	// decoded: the positions its consumer reads from. Nil for other APIs
	// and for a Fetch request that did not decode.
	Fetch *decode.FetchRequest
	// Software is the client software an ApiVersions request (key 18) v3+
	// announced (KIP-511); zero otherwise.
	Software decode.ClientSoftware
}

// NewDecoded returns x with its events, its Fetch request or client
// software decoded. A request that does not decode leaves its field unset:
// the exchange was forwarded untouched, and the diagnosis does without it.
func NewDecoded(x *decode.Exchange, events []decode.Event) *Decoded {
	d := &Decoded{X: x, Events: events}
	if x == nil {
		return d
	}
	switch x.APIKey {
	case int16(kmsg.Fetch):
		if fr, err := decode.DecodeFetchRequest(x); err == nil {
			d.Fetch = fr
		}
	case int16(kmsg.ApiVersions):
		if sw, ok, err := decode.DecodeClientSoftware(x); err == nil && ok {
			d.Software = sw
		}
	}
	return d
}
