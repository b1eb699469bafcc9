//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The names of SNI routing (scenario 25): kproxy's certificate covers
// *.sniDomain, clients bootstrap from bootstrap.sniDomain and are told
// broker-N.sniDomain for node N, all on kproxy's one listen port.
const (
	sniDomain  = "kproxy.test"
	sniPattern = "broker-$(nodeId)." + sniDomain
)

// TestScenario25: SNI routing. kproxy serves every broker on its listen port
// (--sni-host-pattern 'broker-$(nodeId).kproxy.test') with a certificate for
// *.kproxy.test, in front of the broker's plaintext listener. Every client
// speaks TLS to it, seeded with bootstrap.kproxy.test:PORT, and resolves
// the kproxy.test names to 127.0.0.1 by itself, never through /etc/hosts:
// the franz-go producer that feeds the topic with a dialer override
// (franzclient -resolve), two Java consumers with a hosts file of their own
// (-Djdk.net.hosts.file). The consumers tell scenario 3's cooperative
// story; kproxy routes each connection by the name the client
// asked for (the broker names to their node, the bootstrap name to a seed),
// opens no per-broker port, and the timeline tells the same two rounds.
func TestScenario25(t *testing.T) {
	if mode == "direct" {
		t.Log("E2E_MODE=direct: SNI routing is kproxy's; the broker has no kproxy.test names")
		return
	}
	const topic, group = "sni_topic", "test_group_25"
	freshTopic(t, topic, 4, group)
	nodes := brokerNodeIDs(t)
	ptls := makeProxyTLSFor(t, "*."+sniDomain)
	k := startKproxyWith(t, true, brokerAddr, "--tls-cert", ptls.Cert, "--tls-key", ptls.Key,
		"--sni-host-pattern", sniPattern, "--log-format", "json", "--log-level", "debug")
	host, port, _ := net.SplitHostPort(proxyListen)
	bs := net.JoinHostPort("bootstrap."+sniDomain, port)

	franzGo(t, "feed-"+topic, "produce", "-bootstrap", bs, "-topic", topic, "-count", "400",
		"-tls-ca", ptls.CA, "-resolve", "*."+sniDomain+"="+host).waitDone(60 * time.Second)
	env := append(clientSecurity("SSL", ptls.CA, "", "", ""),
		"JAVA_TOOL_OPTIONS=-Djdk.net.hosts.file="+sniHostsFile(t, host, nodes))
	cooperativeClients(t, bs, topic, group, env, env, 0)
	checkNoNodeListeners(t, host, nodes)
	r := k.finish()
	checkSNIRouted(t, nodes)
	if r != nil {
		checkCooperativeTimeline(t, r, topic, group)
	}
}

// brokerNodeIDs are the node ids of the e2e cluster, asked of the broker.
func brokerNodeIDs(t *testing.T) []int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := admin(t).BrokerMetadata(ctx)
	if err != nil {
		t.Fatalf("broker metadata: %v", err)
	}
	ids := md.Brokers.NodeIDs()
	slices.Sort(ids)
	if len(ids) == 0 {
		t.Fatal("broker metadata names no broker")
	}
	return ids
}

// sniHostsFile writes a hosts file (the /etc/hosts format the JVM reads
// with jdk.net.hosts.file) that resolves the bootstrap name and every
// node's name to ip, and returns its path. A JVM given it resolves nothing
// else.
func sniHostsFile(t *testing.T, ip string, nodes []int32) string {
	t.Helper()
	names := []string{"bootstrap." + sniDomain}
	for _, id := range nodes {
		names = append(names, sniHost(id))
	}
	path := filepath.Join(runDir(t), "hosts")
	if err := os.WriteFile(path, []byte(ip+" "+strings.Join(names, " ")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sniHost is the name kproxy advertises for a node.
func sniHost(id int32) string {
	return strings.Replace(sniPattern, "$(nodeId)", strconv.Itoa(int(id)), 1)
}

// checkNoNodeListeners requires the ports kproxy would give the nodes
// without SNI routing (the port base plus the node id) to refuse
// connections: kproxy serves every node on its listen port.
func checkNoNodeListeners(t *testing.T, host string, nodes []int32) {
	t.Helper()
	base, err := strconv.Atoi(proxyPortBase)
	if err != nil {
		t.Fatalf("E2E_PROXY_PORT_BASE %q: %v", proxyPortBase, err)
	}
	for _, id := range nodes {
		addr := net.JoinHostPort(host, strconv.Itoa(base+int(id)))
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("node %d: %s accepts connections; want no per-broker listener with SNI routing", id, addr)
			continue
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("node %d: dial %s: %v; want connection refused", id, addr, err)
		}
	}
}

// checkSNIRouted reads kproxy's JSON log (debug level) for its TLS
// handshakes: clients asked for the bootstrap name and for every node's
// name, and each node name's connections were routed to that node
// (sni_broker_id) while the bootstrap name's went to a seed.
func checkSNIRouted(t *testing.T, nodes []int32) {
	t.Helper()
	f, err := os.Open(filepath.Join(runDir(t), "kproxy.err"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Msg        string `json:"msg"`
			ServerName string `json:"server_name"`
			Routed     *int32 `json:"sni_broker_id"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "TLS handshake done" {
			continue
		}
		routed := "seed"
		if line.Routed != nil {
			routed = fmt.Sprintf("node %d", *line.Routed)
		}
		seen[line.ServerName+" -> "+routed]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"bootstrap." + sniDomain + " -> seed"}
	for _, id := range nodes {
		want = append(want, fmt.Sprintf("%s -> node %d", sniHost(id), id))
	}
	for _, w := range want {
		if seen[w] == 0 {
			t.Errorf("no TLS connection %s in kproxy's log; handshakes by server name and route: %v", w, seen)
		}
	}
	for k := range seen {
		if !slices.Contains(want, k) {
			t.Errorf("TLS connections %s (%d) in kproxy's log; want only %v", k, seen[k], want)
		}
	}
	t.Logf("TLS handshakes by server name and route: %v", seen)
}
