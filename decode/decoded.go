package decode

import "github.com/twmb/franz-go/pkg/kmsg"

// Decoded is one exchange as the pipeline decoded it, for its consumers
// that read more than group events (the diagnosis, the fleet publisher).
type Decoded struct {
	// X is the exchange; nil when the events came without one (tests of
	// synthetic events).
	X *Exchange
	// Events are the group events decoded from X.
	Events []Event
	// Fetch is a Fetch request (key 1, handed out without its response)
	// decoded: the positions its consumer reads from. Nil for other APIs
	// and for a Fetch request that did not
	Fetch *FetchRequest
	// Software is the client software an ApiVersions request (key 18) v3+
	// announced (KIP-511); zero otherwise.
	Software ClientSoftware
}

// NewDecoded returns x with its events, its Fetch request or client
// software decoded. A request that does not decode leaves its field unset:
// the exchange was forwarded untouched, and the diagnosis does without it.
func NewDecoded(x *Exchange, events []Event) *Decoded {
	d := &Decoded{X: x, Events: events}
	if x == nil {
		return d
	}
	switch x.APIKey {
	case int16(kmsg.Fetch):
		if fr, err := DecodeFetchRequest(x); err == nil {
			d.Fetch = fr
		}
	case int16(kmsg.ApiVersions):
		if sw, ok, err := DecodeClientSoftware(x); err == nil && ok {
			d.Software = sw
		}
	}
	return d
}
