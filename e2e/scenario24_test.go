//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestScenario24: kproxy authenticating for its clients (upstream SASL).
// kproxy logs in to the broker's SASL_SSL listener whose sessions last 3 s
// as its own SCRAM-SHA-256 user, password from a file; two kafka-python
// consumers with no credentials at all speak TLS to kproxy. A owns
// up_topic 0,1,2; B joins; A keeps 0,1 and B gets 2. kproxy re-authenticates
// its broker connections before their sessions end (KIP-368), the timeline
// tells the story, and kproxy's password is in nothing it wrote or served.
func TestScenario24(t *testing.T) {
	if mode == "direct" {
		t.Log("E2E_MODE=direct: these clients have no credentials; only kproxy can authenticate for them")
		return
	}
	const topic, group = "up_topic", "test_group_24"
	pw := brokerPasswords(t)
	freshTopic(t, topic, 3, group)
	ptls := makeProxyTLS(t)
	pwFile := filepath.Join(runDir(t), "kproxy-tls", "upstream-password")
	if err := os.WriteFile(pwFile, []byte(pw["kproxy"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := startKproxyWith(t, true, reauthAddr, append(tlsBothSides(ptls),
		"--upstream-sasl-mechanism", "SCRAM-SHA-256", "--upstream-sasl-username", "kproxy",
		"--upstream-sasl-password-file", pwFile)...)
	feed(t, brokerAddr, topic, 600)

	env := clientSecurity("SSL", ptls.CA, "", "", "")
	common := []string{"--bootstrap", proxyListen, "--group", group, "--topic", topic, "--max-poll-records", "10"}
	a := kafkaPythonEnv(t, "kafka-python-A", env, append(common, "--client-id", "up-A", "--work-ms", "1000")...)
	a.waitFor(0, 60*time.Second, "A owning up_topic 0,1,2", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1, 2))
	})
	a.waitFor(0, 30*time.Second, "A's first batch", func(e event) bool { return e.Name == "polled" })
	markA := a.mark()
	b := kafkaPythonEnv(t, "kafka-python-B", env, append(common, "--client-id", "up-B", "--work-ms", "500")...)
	b.waitFor(0, 60*time.Second, "B owning up_topic 2", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 2))
	})
	a.waitFor(markA, 30*time.Second, "A owning up_topic 0,1", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1))
	})
	// Keep consuming past a few 3 s sessions.
	b.waitFor(0, 30*time.Second, "B's first batch", func(e event) bool { return e.Name == "polled" })
	time.Sleep(4 * time.Second)
	b.stop(60 * time.Second)
	a.stop(60 * time.Second)
	saveAdminPages(t)
	metrics, err := os.ReadFile(filepath.Join(runDir(t), "admin-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := metricValue(metrics, "kproxy_upstream_reauthentications_total"); n < 1 {
		t.Errorf("kproxy_upstream_reauthentications_total %d; want kproxy to have renewed its 3 s sessions", n)
	} else {
		t.Logf("kproxy re-authenticated %d upstream sessions", n)
	}
	if n := metricValue(metrics, "kproxy_upstream_sasl_failures_total"); n != 0 {
		t.Errorf("kproxy_upstream_sasl_failures_total %d; want 0", n)
	}
	if r := k.finish(); r != nil {
		g := r.group(t, group)
		_, i := g.mustFind(t, 0, "up-A")
		second, _ := g.mustFind(t, i+1, "up-A", "up-B")
		if got := all(second.member("up-B").Assignment); !slices.Equal(got, parts(topic, 2)) {
			t.Errorf("gen %d: B's assignment %v; want 2", second.Generation, got)
		}
		if got := all(second.member("up-A").Assignment); !slices.Equal(got, parts(topic, 0, 1)) {
			t.Errorf("gen %d: A's assignment %v; want 0,1", second.Generation, got)
		}
	}
	checkNoSecrets(t, []string{pw["kproxy"]}, group, topic)
}

// metricValue is the value of a metric without labels in a /metrics page,
// or -1 when it is missing.
func metricValue(page []byte, name string) int64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\d+)`).FindSubmatch(page)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}
