package proxy

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/decode"
)

// nodeListenerLines returns the broker ids of the "listening for broker
// node" log lines so far.
func nodeListenerLines(logs *observer.ObservedLogs) map[int32]int {
	ids := make(map[int32]int)
	for _, e := range logs.FilterMessageSnippet("listening for broker node").All() {
		if id, ok := e.ContextMap()["broker_id"].(int32); ok {
			ids[id]++
		}
	}
	return ids
}

// exchangesOn counts the observed exchanges per broker id (-1: bootstrap).
func exchangesOn(xs []*decode.Exchange) map[int32]int {
	n := make(map[int32]int)
	for _, x := range xs {
		n[x.BrokerID]++
	}
	return n
}

// TestNodeListenerFromResponse: a node listener kproxy did not open at
// startup is opened when a client's Metadata response names the node, and
// the client's traffic to that node goes through it (route, the
// response-driven path). Without discovery every node takes that path; with
// discovery, a node that joins the cluster later does.
func TestNodeListenerFromResponse(t *testing.T) {
	const topic = "late-node"
	t.Run("discovery off", func(t *testing.T) {
		cluster := startKfake(t, 2, kfake.SeedTopics(2, topic))
		cfg := testConfig(cluster.ListenAddrs()...)
		cfg.DisableBrokerDiscovery = true
		rec := &recorder{}
		log, logs := observedLogger()
		p := startProxy(t, cfg, log, rec)
		p.mu.Lock()
		before := len(p.nodes)
		p.mu.Unlock()
		if before != 0 {
			t.Fatalf("%d nodes known before any client; want 0 with discovery off", before)
		}
		produceVia(t, p.Addr().String(), topic)
		if ids := nodeListenerLines(logs); ids[0] != 1 || ids[1] != 1 {
			t.Errorf("node listeners opened %v; want nodes 0 and 1 once each", ids)
		}
		xs, _ := rec.snapshot()
		if on := exchangesOn(xs); on[0]+on[1] == 0 {
			t.Errorf("observed exchanges per broker %v; want some on the node listeners", on)
		}
		checkNoBypass(t, cluster)
	})
	t.Run("node added after discovery", func(t *testing.T) {
		cluster := startKfake(t, 1, kfake.SeedTopics(1, topic))
		rec := &recorder{}
		log, logs := observedLogger()
		p := startProxy(t, testConfig(cluster.ListenAddrs()...), log, rec)
		waitFor(t, 10*time.Second, "discovery", func() bool {
			return logs.FilterMessageSnippet("broker nodes discovered").Len() == 1
		})
		if _, _, err := cluster.AddNode(1, 0); err != nil {
			t.Fatal(err)
		}
		if err := cluster.MoveTopicPartition(topic, 0, 1); err != nil {
			t.Fatal(err)
		}
		if ids := nodeListenerLines(logs); ids[1] != 0 {
			t.Fatalf("node 1 listener open before any response named it: %v", ids)
		}
		produceVia(t, p.Addr().String(), topic)
		if ids := nodeListenerLines(logs); ids[0] != 1 || ids[1] != 1 {
			t.Errorf("node listeners opened %v; want node 0 (discovery) and node 1 (response) once each", ids)
		}
		xs, _ := rec.snapshot()
		if on := exchangesOn(xs); on[1] == 0 {
			t.Errorf("observed exchanges per broker %v; want some on node 1's listener", on)
		}
		checkNoBypass(t, cluster)
	})
}

// checkNoBypass fails if kfake accepted a connection from 127.0.0.2, where
// the test clients dial from: only kproxy (127.0.0.1) may reach it.
func checkNoBypass(t *testing.T, cluster *fakeCluster) {
	t.Helper()
	for _, remote := range cluster.Accepted() {
		if host, _, _ := net.SplitHostPort(remote); host == "127.0.0.2" {
			t.Errorf("kfake accepted a connection from %s: the client bypassed kproxy", remote)
		}
	}
}

// TestNodeWithoutPortRefused: with the port base near the top of the port
// range, a node whose port would pass 65535 is refused: left out of the
// Metadata clients get, its coordinator answered COORDINATOR_NOT_AVAILABLE,
// counted every time, logged once, and no listener or address kept for it;
// a node in BrokerListeners is served whatever its id.
func TestNodeWithoutPortRefused(t *testing.T) {
	const big = 40 // 65531 + 40 > 65535
	cfg := fakeConfig("127.0.0.1:1")
	cfg.BrokerPortBase = 65531
	cfg.BrokerListeners = map[int32]string{big + 1: "127.0.0.1:0"}
	log, logs := observedLogger()
	p := startProxy(t, cfg, log)

	meta := kmsg.NewPtrMetadataResponse()
	for _, id := range []int32{big, big + 1} {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = id, "broker.internal", 9092
		meta.Brokers = append(meta.Brokers, b)
	}
	meta.SetVersion(12)
	fc := kmsg.NewPtrFindCoordinatorResponse()
	fc.NodeID, fc.Host, fc.Port = big, "broker.internal", 9092
	fc.SetVersion(3)
	for range 2 {
		out, err := rewriteResponse(p, 3, 12, responseFrame(meta, 1))
		if err != nil {
			t.Fatal(err)
		}
		got := parseRewritten(t, 3, 12, out).(*kmsg.MetadataResponse)
		if len(got.Brokers) != 1 || got.Brokers[0].NodeID != big+1 || got.Brokers[0].Port <= 0 {
			t.Fatalf("clients told of brokers %+v; want node %d only, at its listener", got.Brokers, big+1)
		}
		out, err = rewriteResponse(p, 10, 3, responseFrame(fc, 2))
		if err != nil {
			t.Fatal(err)
		}
		gotFC := parseRewritten(t, 10, 3, out).(*kmsg.FindCoordinatorResponse)
		if gotFC.ErrorCode != 15 || gotFC.NodeID != -1 || gotFC.Port != -1 {
			t.Fatalf("FindCoordinator for a refused node: error %d node %d port %d; want COORDINATOR_NOT_AVAILABLE, -1, -1",
				gotFC.ErrorCode, gotFC.NodeID, gotFC.Port)
		}
	}
	if n := p.Stats().NodesRefused; n != 4 {
		t.Errorf("nodes refused %d; want 4 (two responses of each kind)", n)
	}
	if n := logs.FilterMessageSnippet("broker node id too large").Len(); n != 1 {
		t.Errorf("%d refusal log lines; want 1 (once per node)", n)
	}
	if _, ok := p.upstreamOf(big); ok {
		t.Error("an address was kept for the refused node")
	}
	if ids := nodeListenerLines(logs); ids[big] != 0 || ids[big+1] != 1 {
		t.Errorf("node listeners opened %v; want node %d only", ids, big+1)
	}
}

// parseRewritten parses a rewritten response frame (size prefix included).
func parseRewritten(t *testing.T, key, version int16, frame []byte) kmsg.Response {
	t.Helper()
	hl, err := decode.ResponseHeaderLen(key, version, frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	resp, err := parseResponse(key, version, frame[4+hl:])
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
