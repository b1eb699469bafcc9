package decode

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClientSoftware is the client library a connection says it runs, from an
// ApiVersions request v3+ (KIP-511): "apache-kafka-java" 3.7.0,
// "librdkafka" 2.3.0, "kgo" ... Before v3 a client does not say.
type ClientSoftware struct {
	Name    string
	Version string
}

// DecodeClientSoftware reads the client software name and version from the
// request of an ApiVersions exchange (key 18). ok is false before v3, when
// the client sent neither, or on bad bytes (err then says why).
func DecodeClientSoftware(x *Exchange) (sw ClientSoftware, ok bool, err error) {
	if x == nil || x.APIKey != int16(kmsg.ApiVersions) {
		return sw, false, fmt.Errorf("decode: api versions request: not an ApiVersions exchange")
	}
	if x.APIVersion < 3 {
		return sw, false, nil
	}
	h, err := ParseRequestHeader(x.Request)
	if err != nil {
		return sw, false, fmt.Errorf("decode: api versions request header: %w", err)
	}
	req := kmsg.NewPtrApiVersionsRequest()
	if h.APIVersion > req.MaxVersion() {
		// kproxy answers these itself (proxy/apiversions.go); the body
		// layout is not known.
		return sw, false, errVersion(18, h.APIVersion, req.MaxVersion())
	}
	req.SetVersion(h.APIVersion)
	if err := req.ReadFrom(x.Request[h.Len:]); err != nil {
		return sw, false, errRequest(18, h.APIVersion, err)
	}
	sw = ClientSoftware{Name: req.ClientSoftwareName, Version: req.ClientSoftwareVersion}
	return sw, sw.Name != "" || sw.Version != "", nil
}
