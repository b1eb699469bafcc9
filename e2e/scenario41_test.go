//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// finding is what these tests read of a `kproxy diagnose` finding.
type finding struct {
	ID       string         `json:"id"`
	Kind     string         `json:"kind"`
	Group    string         `json:"group"`
	Severity string         `json:"severity"`
	Evidence map[string]any `json:"evidence"`
	Links    []string       `json:"links"`
	Members  []struct {
		MemberID string `json:"memberId"`
		ClientID string `json:"clientId"`
	} `json:"members"`
	Partitions map[string][]int32 `json:"partitions"`
}

// diagnose runs `kproxy diagnose JOURNAL --group G --format json`, with
// the more arguments given (--until T).
func (k *kproxy) diagnose(group string, more ...string) []finding {
	k.t.Helper()
	return k.diagnoseArgs(append([]string{"--group", group}, more...)...)
}

// diagnoseArgs runs `kproxy diagnose JOURNAL --format json` with args.
func (k *kproxy) diagnoseArgs(args ...string) []finding {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args = append([]string{"diagnose", k.journal, "--format", "json"}, args...)
	cmd := exec.CommandContext(ctx, kproxyBin(), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		k.t.Fatalf("kproxy diagnose %s: %v\n%s", k.journal, err, stderr.String())
	}
	var doc struct {
		Findings []finding `json:"findings"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		k.t.Fatalf("kproxy diagnose output: %v\n%s", err, stdout.String())
	}
	return doc.Findings
}

// TestScenario41: a rolling restart of three Java consumers, one after the
// other, first with dynamic membership and then, in another group, with
// group.instance.id and a session timeout longer than a restart. kproxy
// diagnose names the first rollout (rolling_restart: three instances,
// rebalances at each restart) and finds nothing to say of the second,
// which caused no rebalance.
func TestScenario41(t *testing.T) {
	const topic, dynamic, static = "rollout_topic", "test_group_41_dynamic", "test_group_41_static"
	freshTopic(t, topic, 3, dynamic)
	freshTopic(t, topic, 3, static)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 300)

	rollout := func(group string, extra func(id string) []string) {
		args := func(id string) []string {
			return append([]string{"--bootstrap", bs, "--group", group, "--topic", topic, "--client-id", id, "--work-ms", "50"}, extra(id)...)
		}
		var cs []*proc
		for i := 1; i <= 3; i++ {
			id := "java-" + strconv.Itoa(i)
			c := javaClient(t, group+"-"+id, "consume", args(id)...)
			c.waitFor(0, 90*time.Second, id+" assigned", func(e event) bool { return e.Name == "assigned" })
			cs = append(cs, c)
		}
		time.Sleep(5 * time.Second)
		for i := range cs {
			id := "java-" + strconv.Itoa(i+1)
			cs[i].stop(60 * time.Second)
			cs[i] = javaClient(t, group+"-"+id+"-again", "consume", args(id)...)
			cs[i].waitFor(0, 90*time.Second, id+" assigned again", func(e event) bool { return e.Name == "assigned" })
			time.Sleep(3 * time.Second)
		}
		for _, c := range cs {
			c.stop(60 * time.Second)
		}
	}
	rollout(dynamic, func(string) []string { return []string{"--mode", "range"} })
	rollout(static, func(id string) []string {
		return []string{"--mode", "static", "--instance-id", "static-" + id, "--session-ms", "30000"}
	})
	if k.finish() == nil {
		return
	}

	var rolled *finding
	fs := k.diagnose(dynamic)
	for i := range fs {
		if fs[i].Kind == "rolling_restart" {
			rolled = &fs[i]
		}
	}
	if rolled == nil {
		t.Fatalf("%s: no rolling_restart finding among %+v", dynamic, fs)
	}
	if n, _ := rolled.Evidence["instances"].(float64); n != 3 {
		t.Errorf("%s: rollout of %v instances; want 3 (%+v)", dynamic, rolled.Evidence["instances"], rolled.Evidence)
	}
	if m, _ := rolled.Evidence["rebalances"].(float64); m < 3 {
		t.Errorf("%s: rollout cost %v rebalances; want at least one per restart (%+v)", dynamic, m, rolled.Evidence)
	}
	for _, f := range k.diagnose(static) {
		if f.Kind == "rolling_restart" || f.Kind == "rebalance_loop" || f.Kind == "session_timeout_eviction" {
			t.Errorf("%s: %s finding for a static rollout within the session timeout: %+v", static, f.Kind, f.Evidence)
		}
	}
}
