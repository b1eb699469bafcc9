//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestScenario7: `kproxy coordinator test_group_1 --upstream KPROXY` agrees
// with what the broker itself says: its FindCoordinator answer, the
// partition count of its __consumer_offsets, and the partition its group
// coordinator logs for the group.
func TestScenario7(t *testing.T) {
	const group, topic = "test_group_1", "coordinator_topic"
	freshTopic(t, topic, 1, group)
	k := startKproxy(t, false)
	if k == nil {
		t.Fatal("scenario 7 runs kproxy's own command: it has no E2E_MODE=direct")
	}

	// A member joins through kproxy, so that the broker's coordinator logs
	// the group with its partition.
	c := franzGo(t, "member", "consume", "-bootstrap", bootstrap(k), "-group", group, "-topic", topic)
	c.waitFor(0, 60*time.Second, "an assignment", func(e event) bool { return e.Name == "assigned" })
	c.stop(30 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kproxyBin(), "coordinator", group, "--upstream", bootstrap(k)).CombinedOutput()
	if err != nil {
		t.Fatalf("kproxy coordinator: %v\n%s", err, out)
	}
	t.Logf("kproxy coordinator %s --upstream %s:\n%s", group, bootstrap(k), out)
	k.stop()

	// What kproxy said.
	m := regexp.MustCompile(`__consumer_offsets partition (\d+) \(partition count (\d+) from the cluster\)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no partition and cluster partition count in the output")
	}
	partition, _ := strconv.Atoi(string(m[1]))
	count, _ := strconv.Atoi(string(m[2]))
	fc := regexp.MustCompile(`FindCoordinator: node (\d+) \(([^)]*)\)`).FindSubmatch(out)
	if fc == nil {
		t.Fatalf("no FindCoordinator answer in the output")
	}
	if !regexp.MustCompile(`(?m)^verdict: agree`).Match(out) {
		t.Errorf("kproxy coordinator does not say it agrees")
	}

	// What the broker says, asked directly.
	adm := admin(t)
	want := adm.FindGroupCoordinators(ctx, group)[group]
	if want.Err != nil {
		t.Fatalf("broker FindCoordinator: %v", want.Err)
	}
	if got := string(fc[1]); got != strconv.Itoa(int(want.NodeID)) {
		t.Errorf("kproxy coordinator says node %s; the broker says node %d", got, want.NodeID)
	}
	// Through kproxy, the coordinator's address is kproxy's listener for it.
	base, _ := strconv.Atoi(proxyPortBase)
	if got, want := string(fc[2]), "127.0.0.1:"+strconv.Itoa(base+int(want.NodeID)); got != want {
		t.Errorf("FindCoordinator through kproxy gave %s; want kproxy's listener %s", got, want)
	}
	md, err := adm.Metadata(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(md.Topics["__consumer_offsets"].Partitions); n != count || n != 50 {
		t.Errorf("kproxy coordinator says %d partitions; the broker has %d (want Kafka's default 50)", count, n)
	}
	if leader := md.Topics["__consumer_offsets"].Partitions[int32(partition)].Leader; leader != want.NodeID {
		t.Errorf("partition %d is led by node %d; the broker's coordinator is node %d", partition, leader, want.NodeID)
	}

	// The broker's group coordinator logs the partition that holds the group.
	log, err := os.ReadFile(filepath.Join(brokerDir, "logs", "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	// Kafka 4's group coordinator (org.apache.kafka.coordinator.group) names
	// it in its log context, "[GroupCoordinator id=1
	// topic=__consumer_offsets partition=30] ... group test_group_1";
	// 3.x's default, the classic Scala one (kafka.coordinator.group), in
	// parentheses, "[GroupCoordinator 1]: Stabilized group test_group_1
	// generation 1 (__consumer_offsets-30) ...".
	re := regexp.MustCompile(`topic=__consumer_offsets partition=(\d+)\][^\n]*group ` + regexp.QuoteMeta(group) + `\b`)
	if !kafkaAtLeast(4, 0) {
		re = regexp.MustCompile(`\[GroupCoordinator \d+\]: [^\n]*group ` + regexp.QuoteMeta(group) + `\b[^\n]*\(__consumer_offsets-(\d+)\)`)
	}
	lines := re.FindAllSubmatch(log, -1)
	if len(lines) == 0 {
		t.Fatalf("the broker log has no coordinator line for %s", group)
	}
	for _, l := range lines {
		if p, _ := strconv.Atoi(string(l[1])); p != partition {
			t.Errorf("the broker's coordinator logs %s on partition %d; kproxy computed %d", group, p, partition)
		}
	}
}
