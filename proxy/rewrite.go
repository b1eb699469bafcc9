package proxy

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// router gives the address clients must dial for a broker node, and learns
// the node's real address. ok is false for a node clients must not be told
// about (it has no listener port). Proxy implements it with its node
// listeners.
type router interface {
	route(nodeID int32, upstream string) (host string, port int32, ok bool)
}

// errCoordinatorNotAvailable is Kafka's COORDINATOR_NOT_AVAILABLE, answered
// for a coordinator kproxy refuses to route: clients retry, then fail.
const errCoordinatorNotAvailable int16 = 15

// refusedMessage is the error message of such an answer (FindCoordinator
// v1+).
func refusedMessage(nodeID int32) *string {
	s := fmt.Sprintf("kproxy: no listener port for broker node %d (see kproxy's log)", nodeID)
	return &s
}

// routeBrokers rewrites the address of each broker and leaves out those
// the router refuses.
func routeBrokers[B any](r router, brokers []B, fields func(*B) (*int32, *string, *int32)) []B {
	kept := brokers[:0]
	for i := range brokers {
		id, host, port := fields(&brokers[i])
		h, p, ok := r.route(*id, hostPort(*host, *port))
		if !ok {
			continue
		}
		*host, *port = h, p
		kept = append(kept, brokers[i])
	}
	return kept
}

// forgetRefusedController sets *controller to -1 (no controller known)
// when it names a node that is not among the brokers routeBrokers kept: a
// client would look for it there, to reach it through kproxy.
func forgetRefusedController[B any](controller *int32, brokers []B, nodeID func(*B) int32) {
	if *controller < 0 {
		return
	}
	for i := range brokers {
		if nodeID(&brokers[i]) == *controller {
			return
		}
	}
	*controller = -1
}

// routeCoordinator rewrites the address of one coordinator that the
// response names without error, or, when the router refuses its node,
// turns it into a COORDINATOR_NOT_AVAILABLE answer. It reports whether it
// changed anything.
func routeCoordinator(r router, nodeID *int32, host *string, port *int32, code *int16, msg **string) bool {
	if *code != 0 || *nodeID < 0 {
		return false
	}
	h, p, ok := r.route(*nodeID, hostPort(*host, *port))
	if !ok {
		*code, *msg = errCoordinatorNotAvailable, refusedMessage(*nodeID)
		*nodeID, h, p = -1, "", -1
	}
	*host, *port = h, p
	return true
}

// rewriteResponse rewrites a response for which rewritten(key, version)
// holds. frame is the response without its size prefix. It returns the new
// frame with its size prefix, or nil when nothing changed. The response
// header (the correlation id and, for flexible versions, its tags) is kept
// as is.
func rewriteResponse(r router, key, version int16, frame []byte) ([]byte, error) {
	hl, err := decode.ResponseHeaderLen(key, version, frame)
	if err != nil {
		return nil, err
	}
	resp, err := parseResponse(key, version, frame[hl:])
	if err != nil {
		return nil, err
	}
	if !rewriteBody(r, resp) {
		return nil, nil
	}
	out := make([]byte, 4, 4+len(frame)+64)
	out = append(out, frame[:hl]...)
	out = resp.AppendTo(out)
	putSize(out, len(out)-4)
	return out, nil
}

// parseResponse decodes a response body with kmsg. An ApiVersions request
// at a version the broker does not support is answered in v0 (KIP-511), so
// an ApiVersions body that does not parse at its request's version is
// tried again as v0.
func parseResponse(key, version int16, body []byte) (kmsg.Response, error) {
	resp := kmsg.ResponseForKey(key)
	if resp == nil {
		return nil, fmt.Errorf("proxy: api key %d unknown to kmsg", key)
	}
	if version > resp.MaxVersion() {
		return nil, fmt.Errorf("proxy: %s v%d above kmsg's v%d", decode.APIName(key), version, resp.MaxVersion())
	}
	resp.SetVersion(version)
	err := resp.ReadFrom(body)
	if err != nil && key == int16(kmsg.ApiVersions) && version > 0 {
		resp = kmsg.ResponseForKey(key)
		resp.SetVersion(0)
		if resp.ReadFrom(body) == nil {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("proxy: parse %s v%d response: %w", decode.APIName(key), version, err)
	}
	return resp, nil
}

// rewriteBody changes resp in place and reports whether it changed.
func rewriteBody(r router, resp kmsg.Response) bool {
	switch resp := resp.(type) {
	case *kmsg.MetadataResponse:
		changed := len(resp.Brokers) > 0
		resp.Brokers = routeBrokers(r, resp.Brokers, func(b *kmsg.MetadataResponseBroker) (*int32, *string, *int32) {
			return &b.NodeID, &b.Host, &b.Port
		})
		forgetRefusedController(&resp.ControllerID, resp.Brokers, func(b *kmsg.MetadataResponseBroker) int32 { return b.NodeID })
		return changed
	case *kmsg.FindCoordinatorResponse:
		changed := false
		// v0-v3: one coordinator. On error NodeID is -1 and Host empty.
		if resp.Version < 4 {
			changed = routeCoordinator(r, &resp.NodeID, &resp.Host, &resp.Port, &resp.ErrorCode, &resp.ErrorMessage)
		}
		// v4+ (KIP-699): one entry per key.
		for i := range resp.Coordinators {
			c := &resp.Coordinators[i]
			if routeCoordinator(r, &c.NodeID, &c.Host, &c.Port, &c.ErrorCode, &c.ErrorMessage) {
				changed = true
			}
		}
		return changed
	case *kmsg.DescribeClusterResponse:
		// EndpointType 2 (KIP-919) lists controllers, which clients reach
		// with bootstrap.controllers, not through kproxy: their node ids
		// could collide with brokers'.
		if resp.EndpointType == 2 {
			return false
		}
		changed := len(resp.Brokers) > 0
		resp.Brokers = routeBrokers(r, resp.Brokers, func(b *kmsg.DescribeClusterResponseBroker) (*int32, *string, *int32) {
			return &b.NodeID, &b.Host, &b.Port
		})
		forgetRefusedController(&resp.ControllerID, resp.Brokers, func(b *kmsg.DescribeClusterResponseBroker) int32 { return b.NodeID })
		return changed
	case *kmsg.ApiVersionsResponse:
		return clampVersions(resp)
	case *kmsg.ShareAcknowledgeResponse:
		changed := len(resp.NodeEndpoints) > 0
		resp.NodeEndpoints = routeBrokers(r, resp.NodeEndpoints, func(b *kmsg.ShareAcknowledgeResponseNodeEndpoint) (*int32, *string, *int32) {
			return &b.NodeID, &b.Host, &b.Port
		})
		return changed
	}
	return false
}

// clampVersions applies versionCaps to an ApiVersions response. An API
// whose broker minimum is above its cap is left out: kproxy could rewrite
// none of its versions.
func clampVersions(resp *kmsg.ApiVersionsResponse) bool {
	changed := false
	keys := resp.ApiKeys[:0]
	for _, k := range resp.ApiKeys {
		max, ok := versionCaps[k.ApiKey]
		switch {
		case !ok || k.MaxVersion <= max:
		case k.MinVersion > max:
			changed = true
			continue
		default:
			k.MaxVersion = max
			changed = true
		}
		keys = append(keys, k)
	}
	resp.ApiKeys = keys
	return changed
}

func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// putSize writes a frame's 4-byte big-endian size prefix.
func putSize(b []byte, n int) { binary.BigEndian.PutUint32(b, uint32(n)) }
