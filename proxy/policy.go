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
	key int16
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
	{key: 0, max: 9, reason: "KIP-951 NodeEndpoints in Produce v10+ responses"},
	// KIP-951: Fetch v16+ responses may carry NodeEndpoints; fetch
	// responses are the largest frames and are never decoded.
	{key: 1, max: 15, reason: "KIP-951 NodeEndpoints in Fetch v16+ responses"},
	// DescribeQuorum v2+ lists the controllers' listener addresses.
	{key: 55, max: 1, reason: "DescribeQuorum v2+ responses carry controller endpoints"},
	// KIP-932 share groups: ShareFetch and ShareAcknowledge responses
	// carry NodeEndpoints from v0, which kproxy does not rewrite. The
	// share-group APIs are hidden rather than let share consumers learn
	// broker addresses; kproxy supports classic and KIP-848 groups.
	{key: 76, max: hidden, reason: "KIP-932 share groups: NodeEndpoints not rewritten"},
	{key: 78, max: hidden, reason: "KIP-932 ShareFetch responses carry NodeEndpoints from v0"},
	{key: 79, max: hidden, reason: "KIP-932 ShareAcknowledge responses carry NodeEndpoints from v0"},

	// Responses kproxy rewrites must parse.
	{key: 3, max: kmsgMax, rewrite: true, reason: "Metadata: Brokers rewritten"},
	{key: 10, max: kmsgMax, rewrite: true, reason: "FindCoordinator: coordinator (v0-3) and Coordinators (v4+) rewritten; group API decoded"},
	{key: 18, max: kmsgMax, rewrite: true, reason: "ApiVersions: clamped by this policy; kproxy answers a request above kmsg's version itself (apiversions.go)"},
	{key: 60, max: kmsgMax, rewrite: true, reason: "DescribeCluster: Brokers rewritten"},

	// Group APIs the decoder turns into events must parse.
	{key: 8, max: kmsgMax, reason: "OffsetCommit decoded"},
	{key: 9, max: kmsgMax, reason: "OffsetFetch decoded"},
	{key: 11, max: kmsgMax, reason: "JoinGroup decoded"},
	{key: 12, max: kmsgMax, reason: "Heartbeat decoded"},
	{key: 13, max: kmsgMax, reason: "LeaveGroup decoded"},
	{key: 14, max: kmsgMax, reason: "SyncGroup decoded"},
	{key: 68, max: kmsgMax, reason: "KIP-848 ConsumerGroupHeartbeat decoded"},
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
			caps[c.key] = hidden
			continue
		}
		max := c.max
		if r := kmsg.ResponseForKey(c.key); r != nil && (max == kmsgMax || r.MaxVersion() < max) {
			max = r.MaxVersion()
		}
		caps[c.key] = max
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
// (SaslHandshake 17, SaslAuthenticate 36) never does, whatever the decoder
// says: their payloads carry credentials.
func observed(key int16) bool {
	if key == 17 || key == 36 {
		return false
	}
	return decode.Observed(key)
}
