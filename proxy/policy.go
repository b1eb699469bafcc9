package proxy

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// rewriteKind says how kproxy rewrites the responses of an API.
type rewriteKind uint8

const (
	// rewriteNone: responses pass untouched (observed ones are read whole,
	// the others streamed).
	rewriteNone rewriteKind = iota
	// rewriteWhole: responses are read whole, parsed with kmsg, rewritten
	// and encoded again (rewrite.go). Only small responses: they are held
	// to the maximum frame size.
	rewriteWhole
	// rewriteTail: responses are streamed, their record batches never
	// held, and only the part at their end that names brokers
	// (NodeEndpoints) is read whole and rewritten in the same number of
	// bytes (endpoints.go, walk.go).
	rewriteTail
)

// versionCap is one entry of the version policy.
type versionCap struct {
	key kmsg.Key
	// rewrite is how responses at versions from rewriteFrom on are
	// rewritten; every version of an API with a rewrite is capped at the
	// highest kmsg knows, since kproxy must parse what it rewrites.
	rewrite     rewriteKind
	rewriteFrom int16
	reason      string
}

// versionPolicy is the one list of the APIs whose responses kproxy
// rewrites: which, from which version, how, and why. kproxy never changes
// the versions or the features a client sees but for one reason: a
// response it rewrites is advertised up to the highest version kmsg can
// parse (versionCaps), so that it is never left unrewritten. Every other API
// passes at every version the broker supports, APIs the decoder observes
// included: a request above the version kmsg reads is forwarded and not
// observed (observable). TestPolicyCoversRewrittenAPIs checks the list's
// form; e2e scenario 50 (TestScenario50) compares a real broker's ApiVersions
// with what clients get through kproxy and allows only these caps.
//
// Responses that name addresses but pass untouched, and why clients
// cannot tell:
//   - DescribeQuorum v2+ (KIP-853) and DescribeCluster with EndpointType 2
//     (KIP-919) list the controllers' listeners. Clients reach controllers
//     with bootstrap.controllers, never through a broker connection, and
//     kproxy fronts brokers only: the addresses are reported to the user
//     (kafka-metadata-quorum), never dialled through kproxy.
//   - The KRaft APIs that carry NodeEndpoints (Vote, BeginQuorumEpoch,
//     EndQuorumEpoch, FetchSnapshot) are spoken between controllers, not by
//     clients.
var versionPolicy = []versionCap{
	{key: kmsg.Metadata, rewrite: rewriteWhole, reason: "Metadata: Brokers rewritten"},
	{key: kmsg.FindCoordinator, rewrite: rewriteWhole, reason: "FindCoordinator: coordinator (v0-3) and Coordinators (v4+) rewritten; group API decoded"},
	{key: kmsg.ApiVersions, rewrite: rewriteWhole, reason: "ApiVersions: the rewritten APIs capped at kmsg's versions; kproxy answers a request above kmsg's version itself (apiversions.go)"},
	{key: kmsg.DescribeCluster, rewrite: rewriteWhole, reason: "DescribeCluster: Brokers rewritten"},
	// KIP-951: a Produce answer naming a partition's new leader carries
	// the leader's address (NodeEndpoints) from v10, in a tagged field at
	// the end. Walked rather than read whole and parsed with kmsg, which
	// costs more of kproxy's CPU per GiB produced (docs/benchmarks.md,
	// Changes to the forwarding path).
	{key: kmsg.Produce, rewrite: rewriteTail, rewriteFrom: 10, reason: "KIP-951 NodeEndpoints in Produce v10+ responses rewritten at the frame's end"},
	// KIP-951: the same in Fetch from v16: the largest frames stay
	// streamed.
	{key: kmsg.Fetch, rewrite: rewriteTail, rewriteFrom: 16, reason: "KIP-951 NodeEndpoints in Fetch v16+ responses rewritten at the frame's end"},
	// KIP-932 share groups: ShareFetch ends with NodeEndpoints, after its
	// records; ShareAcknowledge answers are small.
	{key: kmsg.ShareFetch, rewrite: rewriteTail, reason: "KIP-932 NodeEndpoints in ShareFetch responses rewritten at the frame's end"},
	{key: kmsg.ShareAcknowledge, rewrite: rewriteWhole, reason: "KIP-932 NodeEndpoints in ShareAcknowledge responses rewritten"},
}

// versionCaps maps an API key of versionPolicy to the highest version
// kproxy advertises (kmsg's), and rewrites maps an API key to its entry;
// both are built from versionPolicy.
var (
	versionCaps = buildVersionCaps(versionPolicy)
	rewrites    = buildRewrites(versionPolicy)
)

func buildVersionCaps(policy []versionCap) map[int16]int16 {
	caps := make(map[int16]int16, len(policy))
	for _, c := range policy {
		if r := kmsg.ResponseForKey(int16(c.key)); r != nil {
			caps[int16(c.key)] = r.MaxVersion()
		}
	}
	return caps
}

func buildRewrites(policy []versionCap) (keys [128]versionCap) {
	for _, c := range policy {
		keys[c.key] = c
	}
	return keys
}

// rewriteOf says how a response of this API and version is rewritten.
func rewriteOf(key, version int16) rewriteKind {
	if key < 0 || int(key) >= len(rewrites) {
		return rewriteNone
	}
	c := rewrites[key]
	if version < c.rewriteFrom {
		return rewriteNone
	}
	return c.rewrite
}

// rewritten reports whether responses of this API and version are read
// whole to be rewritten.
func rewritten(key, version int16) bool { return rewriteOf(key, version) == rewriteWhole }

// observed reports whether exchanges of this API go to the Queue. SASL
// never does, whatever the decoder says: its payloads carry credentials.
func observed(key int16) bool {
	return !saslAPI(key) && decode.Observed(key)
}

// observable reports whether an exchange of an observed API at this version
// can be decoded: one above the versions kmsg knows is forwarded without
// being observed, rather than the API capped for every client.
func observable(key, version int16) bool {
	r := kmsg.ResponseForKey(key)
	return r != nil && version <= r.MaxVersion()
}

// saslAPI reports whether key is one of the SASL APIs (SaslHandshake,
// SaslAuthenticate).
func saslAPI(key int16) bool {
	return key == int16(kmsg.SASLHandshake) || key == int16(kmsg.SASLAuthenticate)
}

// VersionCap is one API whose versions kproxy caps in ApiVersions answers,
// for audits: clients get at most MaxVersion, for Reason.
type VersionCap struct {
	Key        int16
	MaxVersion int16
	Reason     string
}

// VersionCaps lists every API whose versions kproxy caps; every other API
// and every feature reaches clients as the broker advertises it.
func VersionCaps() []VersionCap {
	caps := make([]VersionCap, 0, len(versionPolicy))
	for _, c := range versionPolicy {
		caps = append(caps, VersionCap{Key: int16(c.key), MaxVersion: versionCaps[int16(c.key)], Reason: c.reason})
	}
	return caps
}
