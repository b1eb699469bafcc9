package proxy

import (
	"github.com/kproxy-dev/kproxy/decode"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sentinels for versionCap.max.
const (
	// kmsgMax caps an API at the highest version kmsg knows.
	kmsgMax int16 = -1
	// hidden removes an API from the ApiVersions response.
	hidden int16 = -2
)

// versionCap is one entry of the version policy.
type versionCap struct {
	key kmsg.Key
	max int16 // a version, kmsgMax or hidden
	// rewrite marks the APIs whose responses kproxy rewrites, which are
	// therefore read whole and parsed: those carrying broker addresses,
	// and ApiVersions itself.
	rewrite bool
	reason  string
}

// versionPolicy is the one list of the APIs kproxy treats specially on the
// wire: what it advertises in ApiVersions responses, which responses it
// rewrites, and why. Every cap is also bounded by what kmsg knows, so an
// API is never advertised above a version kproxy could parse; an API whose
// broker minimum is above its cap is removed. APIs not listed pass through
// unchanged at every version the broker supports. TestPolicyCoversDecodedAPIs
// checks that every API the decoder observes is listed.
var versionPolicy = []versionCap{
	// KIP-951: Produce v10+ responses may carry NodeEndpoints (broker
	// addresses). Rewriting them would mean decoding every produce
	// response, so clients are kept on v9.
	{key: kmsg.Produce, max: 9, reason: "KIP-951 NodeEndpoints in Produce v10+ responses"},
	// KIP-951: Fetch v16+ responses may carry NodeEndpoints; fetch
	// responses are the largest frames and are never decoded.
	{key: kmsg.Fetch, max: 15, reason: "KIP-951 NodeEndpoints in Fetch v16+ responses"},
	// DescribeQuorum v2+ lists the controllers' listener addresses.
	{key: kmsg.DescribeQuorum, max: 1, reason: "DescribeQuorum v2+ responses carry controller endpoints"},
	// KIP-932 share groups: ShareFetch and ShareAcknowledge responses
	// carry NodeEndpoints from v0, which kproxy does not rewrite. The
	// share-group APIs are hidden rather than let share consumers learn
	// broker addresses; kproxy supports classic and KIP-848 groups.
	{key: kmsg.ShareGroupHeartbeat, max: hidden, reason: "KIP-932 share groups: NodeEndpoints not rewritten"},
	{key: kmsg.ShareFetch, max: hidden, reason: "KIP-932 ShareFetch responses carry NodeEndpoints from v0"},
	{key: kmsg.ShareAcknowledge, max: hidden, reason: "KIP-932 ShareAcknowledge responses carry NodeEndpoints from v0"},

	// Responses kproxy rewrites must parse.
	{key: kmsg.Metadata, max: kmsgMax, rewrite: true, reason: "Metadata: Brokers rewritten"},
	{key: kmsg.FindCoordinator, max: kmsgMax, rewrite: true, reason: "FindCoordinator: coordinator (v0-3) and Coordinators (v4+) rewritten; group API decoded"},
	{key: kmsg.ApiVersions, max: kmsgMax, rewrite: true, reason: "ApiVersions: clamped by this policy; kproxy answers a request above kmsg's version itself (apiversions.go)"},
	{key: kmsg.DescribeCluster, max: kmsgMax, rewrite: true, reason: "DescribeCluster: Brokers rewritten"},

	// Group APIs the decoder turns into events must parse.
	{key: kmsg.OffsetCommit, max: kmsgMax, reason: "OffsetCommit decoded"},
	{key: kmsg.OffsetFetch, max: kmsgMax, reason: "OffsetFetch decoded"},
	{key: kmsg.JoinGroup, max: kmsgMax, reason: "JoinGroup decoded"},
	{key: kmsg.Heartbeat, max: kmsgMax, reason: "Heartbeat decoded"},
	{key: kmsg.LeaveGroup, max: kmsgMax, reason: "LeaveGroup decoded"},
	{key: kmsg.SyncGroup, max: kmsgMax, reason: "SyncGroup decoded"},
	{key: kmsg.ConsumerGroupHeartbeat, max: kmsgMax, reason: "KIP-848 ConsumerGroupHeartbeat decoded"},
}

// versionCaps maps an API key to its effective maximum version (or hidden),
// and rewrittenKeys marks the APIs whose responses are rewritten; both are
// built from versionPolicy.
var (
	versionCaps   = buildVersionCaps(versionPolicy)
	rewrittenKeys = buildRewritten(versionPolicy)
)

func buildVersionCaps(policy []versionCap) map[int16]int16 {
	caps := make(map[int16]int16, len(policy))
	for _, c := range policy {
		if c.max == hidden {
			caps[int16(c.key)] = hidden
			continue
		}
		max := c.max
		if r := kmsg.ResponseForKey(int16(c.key)); r != nil && (max == kmsgMax || r.MaxVersion() < max) {
			max = r.MaxVersion()
		}
		caps[int16(c.key)] = max
	}
	return caps
}

func buildRewritten(policy []versionCap) (keys [128]bool) {
	for _, c := range policy {
		if c.rewrite {
			keys[c.key] = true
		}
	}
	return keys
}

// rewritten reports whether responses of this API are rewritten, so must be
// read whole (versionPolicy's rewrite).
func rewritten(key int16) bool {
	return key >= 0 && int(key) < len(rewrittenKeys) && rewrittenKeys[key]
}

// observed reports whether exchanges of this API go to the Queue. SASL
// never does, whatever the decoder says: its payloads carry credentials.
func observed(key int16) bool {
	return !saslAPI(key) && decode.Observed(key)
}

// saslAPI reports whether key is one of the SASL APIs (SaslHandshake,
// SaslAuthenticate).
func saslAPI(key int16) bool {
	return key == int16(kmsg.SASLHandshake) || key == int16(kmsg.SASLAuthenticate)
}
