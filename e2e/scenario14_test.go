//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestScenario14: ids a hostile client chooses cannot forge kproxy's log,
// and a page whose name was pointed at kproxy's host (DNS rebinding) cannot
// read its admin server. A franz-go consumer with a group id holding a
// newline and a forged log line, and a client id holding a terminal escape
// sequence, joins a group through kproxy: the console log shows both
// escaped, on kproxy's own lines. The admin server answers 421 to a Host
// header naming another site, and carries nosniff and its
// Content-Security-Policy. Then 24 groups of a member subscribing to 2,000
// topic names of 249 bytes each make the timeline's JSON page about 12 MB,
// and three readers ask for it and read nothing for 10 s: /metrics,
// /healthz and /api/groups must keep answering beside them.
func TestScenario14(t *testing.T) {
	const topic = "forge_topic"
	const forgedGroup = "e2e-forge\n10:29:00.000\tERROR\tFORGED group line"
	const forgedClient = "e2e-client\x1b]0;pwned\x07"
	freshTopic(t, topic, 1, "")
	k := startKproxyWith(t, false, brokerAddr, "--admin", proxyAdmin)
	if k == nil {
		t.Fatal("scenario 14 reads kproxy's log: it has no E2E_MODE=direct")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	assigned := make(chan struct{}, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap(k)), kgo.ConsumerGroup(forgedGroup), kgo.ClientID(forgedClient),
		kgo.ConsumeTopics(topic), kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	select {
	case <-assigned:
	case <-ctx.Done():
		t.Fatal("the consumer with the forged group id got no assignment")
	}
	cl.Close()
	cancel()

	// The admin server, from a rebound name and from its own address.
	get := func(host string) *http.Response {
		req, err := http.NewRequest("GET", "http://"+proxyAdmin+"/api/groups", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get("attacker.example:80"); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host attacker.example: status %d; want 421", resp.StatusCode)
	}
	resp := get(proxyAdmin)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("Host %s: status %d; want 200", proxyAdmin, resp.StatusCode)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("headers %v: want nosniff and the Content-Security-Policy", resp.Header)
	}

	bulkyGroups(t, bootstrap(k), 24, 2000)
	slowAdminReaders(t, proxyAdmin, "/api/timeline?limit=1000", 3, 10*time.Second)

	k.stop()
	logBytes, err := os.ReadFile(filepath.Join(runDir(t), "kproxy.err"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(logBytes)
	if !strings.Contains(log, `e2e-forge\n10:29:00.000\tERROR\tFORGED group line`) {
		t.Errorf("the forged group id is not in kproxy's log, escaped:\n%s", k.proc.tail())
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, "10:29:00.000") {
			t.Errorf("a forged line of its own in kproxy's log: %q", line)
		}
	}
	if strings.ContainsRune(log, '\x1b') {
		t.Error("a terminal escape sequence reached kproxy's log")
	}
}
