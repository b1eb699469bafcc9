package proxy

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// A streamed response (rewriteTail) names brokers only at its end: Produce
// v10+ and Fetch v16+ in their top-level tagged field 0 (KIP-951), ShareFetch in its last
// field, NodeEndpoints (KIP-932). kproxy walks the frame as it streams it
// (walk.go) and reads only that tail whole. Its size prefix went out first,
// so the rewritten tail must keep the tail's length:
//   - the addresses rewritten, the tail padded with an unknown top-level
//     tagged field, which every client skips (tagged fields are optional by
//     design, KIP-482), when that fits: kproxy's addresses are no longer
//     than the brokers', by at least two bytes or not at all;
//   - otherwise the endpoints dropped and the tail padded the same way:
//     the client then dials the new leader at the address it already has
//     for that node, kproxy's, or asks for Metadata, as clients did before
//     KIP-951. Counted (endpointsDropped) and logged once.

// padTags are the top-level tag numbers the padding uses: a one-byte and a
// two-byte uvarint, both unknown to any version of these responses.
var padTags = [...]uint32{127, 16383}

// errTailUnchanged is returned by rewriteEndpoints for a tail with no
// endpoints.
var errTailUnchanged = errors.New("proxy: no endpoints to rewrite")

// tailPrefix is the body of an empty response of this API and version up
// to where a walked response's tail begins, so that prefix and tail parse
// with kmsg as one response: Produce's empty topic array and throttle
// time, Fetch's throttle time, error code and session id, ShareFetch's throttle time, error code, no error message and (v1+)
// acquisition lock timeout, each followed by an empty topic array.
func tailPrefix(key, version int16) []byte {
	switch kmsg.Key(key) {
	case kmsg.Produce:
		return []byte{1, 0, 0, 0, 0}
	case kmsg.Fetch:
		return []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	case kmsg.ShareFetch:
		b := []byte{0, 0, 0, 0, 0, 0, 0}
		if version >= 1 {
			b = append(b, 0, 0, 0, 0)
		}
		return append(b, 1)
	}
	return nil
}

// rewriteEndpoints rewrites the broker addresses in the tail of a walked
// response, in exactly len(tail) bytes. It returns errTailUnchanged when the
// tail names no broker, and reports whether it had to drop the endpoints
// rather than rewrite them.
func rewriteEndpoints(r router, key, version int16, tail []byte) (out []byte, dropped bool, err error) {
	prefix := tailPrefix(key, version)
	if prefix == nil {
		return nil, false, fmt.Errorf("proxy: %s responses have no rewritten tail", decode.APIName(key))
	}
	body := append(prefix[:len(prefix):len(prefix)], tail...)
	resp, err := parseResponse(key, version, body)
	if err != nil {
		return nil, false, err
	}
	var tags *kmsg.Tags
	var route, drop func()
	switch resp := resp.(type) {
	case *kmsg.ProduceResponse:
		if len(resp.Brokers) == 0 {
			return nil, false, errTailUnchanged
		}
		tags = &resp.UnknownTags
		route = func() {
			resp.Brokers = routeBrokers(r, resp.Brokers, func(b *kmsg.ProduceResponseBroker) (*int32, *string, *int32) {
				return &b.NodeID, &b.Host, &b.Port
			})
		}
		drop = func() { resp.Brokers = nil }
	case *kmsg.FetchResponse:
		if len(resp.Brokers) == 0 {
			return nil, false, errTailUnchanged
		}
		tags = &resp.UnknownTags
		route = func() {
			resp.Brokers = routeBrokers(r, resp.Brokers, func(b *kmsg.FetchResponseBroker) (*int32, *string, *int32) {
				return &b.NodeID, &b.Host, &b.Port
			})
		}
		drop = func() { resp.Brokers = nil }
	case *kmsg.ShareFetchResponse:
		if len(resp.NodeEndpoints) == 0 {
			return nil, false, errTailUnchanged
		}
		tags = &resp.UnknownTags
		route = func() {
			resp.NodeEndpoints = routeBrokers(r, resp.NodeEndpoints, func(b *kmsg.ShareFetchResponseNodeEndpoint) (*int32, *string, *int32) {
				return &b.NodeID, &b.Host, &b.Port
			})
		}
		drop = func() { resp.NodeEndpoints = nil }
	}
	// kmsg ignores bytes after a response, and reads varints not in their
	// shortest form: only a tail it writes back byte for byte is rewritten.
	if !bytes.Equal(resp.AppendTo(nil), body) {
		return nil, false, fmt.Errorf("proxy: %s v%d tail is not as kmsg writes it", decode.APIName(key), version)
	}
	padFree := true
	tags.Each(func(k uint32, _ []byte) { padFree = padFree && k != padTags[0] && k != padTags[1] })
	if !padFree {
		return nil, false, fmt.Errorf("proxy: %s v%d tail already holds tag %d or %d", decode.APIName(key), version, padTags[0], padTags[1])
	}
	route()
	if out, ok := padded(resp, tags, prefix, len(tail)); ok {
		return out, false, nil
	}
	drop()
	if out, ok := padded(resp, tags, prefix, len(tail)); ok {
		return out, true, nil
	}
	return nil, false, fmt.Errorf("proxy: %s v%d tail of %d bytes cannot keep its length without its endpoints", decode.APIName(key), version, len(tail))
}

// padded encodes resp, whose encoding starts with prefix, adding to tags
// the padding that makes its tail exactly n bytes, and returns that tail.
// It reports false when no padding fits.
func padded(resp kmsg.Response, tags *kmsg.Tags, prefix []byte, n int) ([]byte, bool) {
	enc := resp.AppendTo(nil)
	if !bytes.HasPrefix(enc, prefix) {
		return nil, false
	}
	d := n - (len(enc) - len(prefix))
	if d == 0 {
		return enc[len(prefix):], true
	}
	// One more tag costs its number, its length and its bytes: find a
	// filler length f with uvarint(tag) + uvarint(f) + f == d.
	for _, tag := range padTags {
		for sl := 1; sl <= 3; sl++ {
			f := d - uvarintLen(tag) - sl
			if f < 0 || uvarintLen(uint32(f)) != sl {
				continue
			}
			tags.Set(tag, make([]byte, f))
			enc = resp.AppendTo(enc[:0])
			// The count of tags may have grown by a byte (from 127
			// tags): then no padding fits.
			if len(enc)-len(prefix) != n {
				return nil, false
			}
			return enc[len(prefix):], true
		}
	}
	return nil, false
}

// uvarintLen is the length of x as a uvarint.
func uvarintLen(x uint32) int { return len(kbin.AppendUvarint(nil, x)) }
