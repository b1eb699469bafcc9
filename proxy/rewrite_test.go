package proxy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeRouter routes node N to kproxy.test:30000+N and records what it
// learned; it refuses nodes from refusedNode on, as Proxy refuses nodes
// without a listener port.
type fakeRouter struct{ learned map[int32]string }

const refusedNode = 1000

func (r *fakeRouter) route(id int32, upstream string) (string, int32, bool) {
	if id >= refusedNode {
		return "", 0, false
	}
	r.learned[id] = upstream
	return "kproxy.test", 30000 + id, true
}

// responseFrame encodes resp with its response header, as a broker would:
// the correlation id, then an empty tag section for flexible versions
// (ApiVersions always uses header v0).
func responseFrame(resp kmsg.Response, corr int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(corr))
	if resp.IsFlexible() && resp.Key() != 18 {
		b = append(b, 0)
	}
	return resp.AppendTo(b)
}

// checkRewrite rewrites in at version v and compares the result with want
// encoded the same way.
func checkRewrite(t *testing.T, in, want kmsg.Response, v int16, wantChanged bool, wantLearned map[int32]string) {
	t.Helper()
	in.SetVersion(v)
	want.SetVersion(v)
	r := &fakeRouter{learned: make(map[int32]string)}
	got, err := rewriteResponse(r, in.Key(), v, responseFrame(in, 77))
	if err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if !wantChanged {
		if got != nil {
			t.Fatalf("rewritten; want the response untouched")
		}
		return
	}
	if got == nil {
		t.Fatal("untouched; want it rewritten")
	}
	if n := int(binary.BigEndian.Uint32(got)); n != len(got)-4 {
		t.Fatalf("size prefix %d; frame has %d bytes", n, len(got)-4)
	}
	if w := responseFrame(want, 77); !bytes.Equal(got[4:], w) {
		t.Fatalf("rewritten frame\n%x\nwant\n%x", got[4:], w)
	}
	for id, addr := range wantLearned {
		if r.learned[id] != addr {
			t.Errorf("learned node %d at %q; want %q", id, r.learned[id], addr)
		}
	}
}

func TestRewriteMetadata(t *testing.T) {
	build := func(host string, port int32) *kmsg.MetadataResponse {
		resp := kmsg.NewPtrMetadataResponse()
		for _, id := range []int32{1, 7} {
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = id, host, port+id
			resp.Brokers = append(resp.Brokers, b)
		}
		resp.ControllerID = 7
		topic := kmsg.NewMetadataResponseTopic()
		topic.Topic = kmsg.StringPtr("t")
		topic.Partitions = append(topic.Partitions, kmsg.NewMetadataResponseTopicPartition())
		resp.Topics = append(resp.Topics, topic)
		return resp
	}
	for v := range kmsg.NewPtrMetadataResponse().MaxVersion() + 1 {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			in, want := build("broker.internal", 9092), build("kproxy.test", 30000)
			checkRewrite(t, in, want, v, true, map[int32]string{1: "broker.internal:9093", 7: "broker.internal:9099"})
		})
	}
}

func TestRewriteFindCoordinator(t *testing.T) {
	build := func(host string, port int32) *kmsg.FindCoordinatorResponse {
		resp := kmsg.NewPtrFindCoordinatorResponse()
		resp.NodeID, resp.Host, resp.Port = 2, host, port+2
		ok := kmsg.NewFindCoordinatorResponseCoordinator()
		ok.Key, ok.NodeID, ok.Host, ok.Port = "g1", 2, host, port+2
		failed := kmsg.NewFindCoordinatorResponseCoordinator()
		failed.Key, failed.NodeID, failed.Port, failed.ErrorCode = "g2", -1, -1, 15
		resp.Coordinators = []kmsg.FindCoordinatorResponseCoordinator{ok, failed}
		return resp
	}
	for v := range kmsg.NewPtrFindCoordinatorResponse().MaxVersion() + 1 {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			in, want := build("broker.internal", 9092), build("kproxy.test", 30000)
			checkRewrite(t, in, want, v, true, map[int32]string{2: "broker.internal:9094"})
		})
	}
	t.Run("v3 error", func(t *testing.T) {
		in := kmsg.NewPtrFindCoordinatorResponse()
		in.ErrorCode, in.NodeID, in.Port = 15, -1, -1
		checkRewrite(t, in, in, 3, false, nil)
	})
}

// TestRewriteLeaderEndpoints: the new leaders' addresses in ShareAcknowledge
// answers (KIP-932) are kproxy's; a node without a listener port is left
// out. (Produce, Fetch and ShareFetch answers are walked: walk_test.go.)
func TestRewriteLeaderEndpoints(t *testing.T) {
	ack := func(host string, port int32, ids ...int32) *kmsg.ShareAcknowledgeResponse {
		resp := kmsg.NewPtrShareAcknowledgeResponse()
		for _, id := range ids {
			b := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
			b.NodeID, b.Host, b.Port = id, host, port+id
			resp.NodeEndpoints = append(resp.NodeEndpoints, b)
		}
		return resp
	}
	for v := range kmsg.NewPtrShareAcknowledgeResponse().MaxVersion() + 1 {
		t.Run(fmt.Sprintf("ShareAcknowledge v%d", v), func(t *testing.T) {
			checkRewrite(t, ack("broker.internal", 9092, 3), ack("kproxy.test", 30000, 3), v, true,
				map[int32]string{3: "broker.internal:9095"})
		})
	}
	if rewriteOf(int16(kmsg.Produce), 9) != rewriteNone || rewriteOf(int16(kmsg.Produce), 10) != rewriteTail {
		t.Error("Produce must be walked from v10 only")
	}
}

func TestRewriteDescribeCluster(t *testing.T) {
	build := func(host string, port int32, endpointType int8) *kmsg.DescribeClusterResponse {
		resp := kmsg.NewPtrDescribeClusterResponse()
		resp.EndpointType = endpointType
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port = 3, host, port+3
		resp.Brokers = append(resp.Brokers, b)
		return resp
	}
	for v := range kmsg.NewPtrDescribeClusterResponse().MaxVersion() + 1 {
		t.Run(fmt.Sprintf("v%d brokers", v), func(t *testing.T) {
			checkRewrite(t, build("broker.internal", 9092, 1), build("kproxy.test", 30000, 1), v, true,
				map[int32]string{3: "broker.internal:9095"})
		})
	}
	t.Run("v1 controllers untouched", func(t *testing.T) {
		in := build("controller.internal", 9092, 2)
		checkRewrite(t, in, in, 1, false, nil)
	})
}

func TestClampApiVersions(t *testing.T) {
	key := func(k, min, max int16) kmsg.ApiVersionsResponseApiKey {
		return kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: min, MaxVersion: max}
	}
	joinMax := kmsg.NewPtrJoinGroupResponse().MaxVersion()
	build := func(keys ...kmsg.ApiVersionsResponseApiKey) *kmsg.ApiVersionsResponse {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ApiKeys = keys
		return resp
	}
	produceMax := kmsg.NewPtrProduceResponse().MaxVersion()
	fetchMax := kmsg.NewPtrFetchResponse().MaxVersion()
	// Produce and Fetch above kmsg's versions are capped (kproxy rewrites
	// them); JoinGroup, only decoded, passes at the broker's versions, as do
	// the share-group and quorum APIs.
	in := func() *kmsg.ApiVersionsResponse {
		return build(key(0, 3, produceMax+2), key(1, 4, fetchMax+1), key(11, 0, joinMax+5), key(32, 0, 4), key(55, 0, 2),
			key(78, 0, 1), key(76, 0, 1))
	}
	want := build(key(0, 3, produceMax), key(1, 4, fetchMax), key(11, 0, joinMax+5), key(32, 0, 4), key(55, 0, 2),
		key(78, 0, 1), key(76, 0, 1))
	for v := range kmsg.NewPtrApiVersionsResponse().MaxVersion() + 1 {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			checkRewrite(t, in(), want, v, true, nil)
		})
	}
	t.Run("minimum above cap removes the api", func(t *testing.T) {
		checkRewrite(t, build(key(0, produceMax+1, produceMax+3), key(32, 0, 4)), build(key(32, 0, 4)), 3, true, nil)
	})
	t.Run("nothing to clamp", func(t *testing.T) {
		in := build(key(0, 3, produceMax), key(11, 0, joinMax+1), key(32, 0, 4))
		checkRewrite(t, in, in, 3, false, nil)
	})
	t.Run("v0 answer to an unsupported version (KIP-511)", func(t *testing.T) {
		resp := build(key(18, 0, 3))
		resp.ErrorCode = 35
		resp.SetVersion(0)
		frame := responseFrame(resp, 9)
		r := &fakeRouter{learned: make(map[int32]string)}
		if _, err := rewriteResponse(r, 18, 4, frame); err != nil {
			t.Errorf("v0 fallback response: %v; want it parsed", err)
		}
	})
}

func TestRewriteGarbageFails(t *testing.T) {
	r := &fakeRouter{learned: make(map[int32]string)}
	for _, key := range []int16{3, 10, 18, 60} {
		frame := []byte{0, 0, 0, 1, 0, 0, 0x7f, 0xff, 0xff, 0xff, 1, 2}
		if out, err := rewriteResponse(r, key, 1, frame); err == nil || out != nil {
			t.Errorf("key %d: rewrite of garbage returned %x, %v; want an error", key, out, err)
		}
	}
}

// TestPolicyCoversRewrittenAPIs: each API of the policy is listed once,
// with its reason and a rewrite; an API is capped in ApiVersions only if its
// responses are rewritten, and then at the version kmsg knows; SASL is
// never observed.
func TestPolicyCoversRewrittenAPIs(t *testing.T) {
	listed := make(map[int16]bool)
	for _, c := range versionPolicy {
		key := int16(c.key)
		if listed[key] {
			t.Errorf("key %d listed twice", key)
		}
		listed[key] = true
		if c.reason == "" || c.rewrite == rewriteNone {
			t.Errorf("%s: reason %q, rewrite %d; want both", kmsg.NameForKey(key), c.reason, c.rewrite)
		}
		if max := kmsg.ResponseForKey(key).MaxVersion(); versionCaps[key] != max {
			t.Errorf("%s capped at v%d; want kmsg's v%d", kmsg.NameForKey(key), versionCaps[key], max)
		}
	}
	for key := range int16(128) {
		if _, capped := versionCaps[key]; capped != listed[key] {
			t.Errorf("%s (key %d): capped %v, listed %v", kmsg.NameForKey(key), key, capped, listed[key])
		}
	}
	if observed(int16(kmsg.SASLHandshake)) || observed(int16(kmsg.SASLAuthenticate)) {
		t.Error("SASL APIs must never be observed")
	}
}

// TestRewriteRefusedNodes: a node the router refuses is left out of
// Metadata and DescribeCluster responses, and a coordinator it would be is
// answered COORDINATOR_NOT_AVAILABLE, so that clients never get an address
// that cannot work.
func TestRewriteRefusedNodes(t *testing.T) {
	const big = refusedNode + 500
	metadata := func(host string, port int32, ids ...int32) *kmsg.MetadataResponse {
		resp := kmsg.NewPtrMetadataResponse()
		for _, id := range ids {
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = id, host, port+id
			resp.Brokers = append(resp.Brokers, b)
		}
		return resp
	}
	cluster := func(host string, port int32, ids ...int32) *kmsg.DescribeClusterResponse {
		resp := kmsg.NewPtrDescribeClusterResponse()
		for _, id := range ids {
			b := kmsg.NewDescribeClusterResponseBroker()
			b.NodeID, b.Host, b.Port = id, host, port+id
			resp.Brokers = append(resp.Brokers, b)
		}
		return resp
	}
	unavailable := func(c *kmsg.FindCoordinatorResponseCoordinator, id int32) {
		c.ErrorCode, c.ErrorMessage = 15, refusedMessage(id)
		c.NodeID, c.Host, c.Port = -1, "", -1
	}
	withController := func(resp kmsg.Response, id int32) kmsg.Response {
		switch resp := resp.(type) {
		case *kmsg.MetadataResponse:
			resp.ControllerID = id
		case *kmsg.DescribeClusterResponse:
			resp.ControllerID = id
		}
		return resp
	}
	for v := range kmsg.NewPtrMetadataResponse().MaxVersion() + 1 {
		t.Run(fmt.Sprintf("Metadata v%d", v), func(t *testing.T) {
			checkRewrite(t, metadata("broker.internal", 9092, 1, big, 7), metadata("kproxy.test", 30000, 1, 7), v, true,
				map[int32]string{1: "broker.internal:9093", 7: "broker.internal:9099"})
			if v >= 1 { // ControllerID is there from v1
				checkRewrite(t, withController(metadata("broker.internal", 9092, 1, big, 7), 7),
					withController(metadata("kproxy.test", 30000, 1, 7), 7), v, true, nil)
				checkRewrite(t, withController(metadata("broker.internal", 9092, 1, big, 7), big),
					withController(metadata("kproxy.test", 30000, 1, 7), -1), v, true, nil)
			}
		})
	}
	for v := range kmsg.NewPtrDescribeClusterResponse().MaxVersion() + 1 {
		t.Run(fmt.Sprintf("DescribeCluster v%d", v), func(t *testing.T) {
			checkRewrite(t, cluster("broker.internal", 9092, big, 2), cluster("kproxy.test", 30000, 2), v, true,
				map[int32]string{2: "broker.internal:9094"})
			checkRewrite(t, withController(cluster("broker.internal", 9092, big, 2), 2),
				withController(cluster("kproxy.test", 30000, 2), 2), v, true, nil)
			checkRewrite(t, withController(cluster("broker.internal", 9092, big, 2), big),
				withController(cluster("kproxy.test", 30000, 2), -1), v, true, nil)
		})
	}
	for v := range kmsg.NewPtrFindCoordinatorResponse().MaxVersion() + 1 {
		t.Run(fmt.Sprintf("FindCoordinator v%d", v), func(t *testing.T) {
			in, want := kmsg.NewPtrFindCoordinatorResponse(), kmsg.NewPtrFindCoordinatorResponse()
			if v < 4 {
				in.NodeID, in.Host, in.Port = big, "broker.internal", 9092
				want.ErrorCode, want.ErrorMessage = 15, refusedMessage(big)
				want.NodeID, want.Host, want.Port = -1, "", -1
			} else {
				for _, id := range []int32{big, 3} {
					c := kmsg.NewFindCoordinatorResponseCoordinator()
					c.Key, c.NodeID, c.Host, c.Port = fmt.Sprint("g", id), id, "broker.internal", 9092+id
					in.Coordinators = append(in.Coordinators, c)
				}
				refused, ok := in.Coordinators[0], in.Coordinators[1]
				unavailable(&refused, big)
				ok.Host, ok.Port = "kproxy.test", 30003
				want.Coordinators = []kmsg.FindCoordinatorResponseCoordinator{refused, ok}
			}
			checkRewrite(t, in, want, v, true, nil)
		})
	}
}
