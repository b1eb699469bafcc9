package decode

import "github.com/twmb/franz-go/pkg/kmsg"

// ClientSoftware is the client library a connection says it runs, from an
// ApiVersions request v3+ (KIP-511): "apache-kafka-java" 3.7.0,
// "librdkafka" 2.3.0, "kgo" ... Before v3 a client does not say.
type ClientSoftware struct {
	Name    string
	Version string
}

// DecodeClientSoftware reads the client software name and version from the
// request of an ApiVersions exchange (key 18). ok is false before v3, when
// the client sent neither, or on bad bytes or a request header that does
// not match the exchange (err then says why). A version above what kmsg
// knows is an error too: kproxy answers those itself
// (proxy/apiversions.go), and the body's layout is not known.
func DecodeClientSoftware(x *Exchange) (sw ClientSoftware, ok bool, err error) {
	if x != nil && x.APIKey == int16(kmsg.ApiVersions) && x.APIVersion < 3 {
		return sw, false, nil
	}
	req := kmsg.NewPtrApiVersionsRequest()
	if err := readRequest(x, req); err != nil {
		return sw, false, err
	}
	sw = ClientSoftware{Name: req.ClientSoftwareName, Version: req.ClientSoftwareVersion}
	return sw, sw.Name != "" || sw.Version != "", nil
}
