//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// healthyFamily is one client family of scenario 46: how to start one of
// its members at the client's default timeouts.
type healthyFamily struct {
	name  string
	start func(t *testing.T, name, group string) *proc
}

// liveFinding is what scenario 46 reads of a finding of /api/diagnosis.
type liveFinding struct {
	ID          string         `json:"id"`
	Kind        string         `json:"kind"`
	Group       string         `json:"group"`
	Severity    string         `json:"severity"`
	Evidence    map[string]any `json:"evidence"`
	Explanation string         `json:"explanation"`
}

// TestScenario46: healthy groups of every client family in the suite, at
// their default timeouts, side by side on one topic with steady produce
// through kproxy, for E2E_HEALTHY_DURATION (default 5m): one group per
// family (Java classic, Java KIP-848, kafka-python, librdkafka through
// confluent-kafka, kafkajs, franz-go), two members each, started together.
// kproxy's live diagnosis (/api/diagnosis) must hold no warning and no
// critical finding; info findings are logged, and the findings per family
// are written to findings.json in the run directory, and the table of
// findings by severity and false findings (warning or critical) per
// member-minute to healthy.md and the test log: the healthy half of the
// accuracy matrix (scenario 55).
func TestScenario46(t *testing.T) {
	d, err := time.ParseDuration(envOr("E2E_HEALTHY_DURATION", "5m"))
	if err != nil || d <= 0 {
		t.Fatalf("E2E_HEALTHY_DURATION=%q: want a positive duration such as 5m", envOr("E2E_HEALTHY_DURATION", ""))
	}
	const topic = "healthy_topic"
	freshTopic(t, topic, 4, "")
	k := startKproxyWith(t, true, brokerAddr, "--admin", proxyAdmin)
	if k == nil {
		t.Skip("scenario 46 reads kproxy's live diagnosis")
	}
	bs := bootstrap(k)
	// Group ids of their own per run: a broker that ran the scenario before
	// keeps its groups' offsets.
	run := time.Now().Unix()
	groupOf := func(family string) string { return fmt.Sprintf("test_group_46_%s_%d", family, run) }
	common := func(group string) []string { return []string{"--bootstrap", bs, "--group", group, "--topic", topic} }
	families := []healthyFamily{
		{"java_classic", func(t *testing.T, name, group string) *proc {
			return javaClient(t, name, "consume", append(common(group), "--client-id", name, "--session-ms", "0", "--max-poll-records", "0")...)
		}},
		{"java_consumer", func(t *testing.T, name, group string) *proc {
			return javaClient(t, name, "consume", append(common(group), "--client-id", name, "--mode", "consumer", "--max-poll-records", "0")...)
		}},
		{"kafka_python", func(t *testing.T, name, group string) *proc {
			return kafkaPython(t, name, append(common(group), "--client-id", name, "--session-ms", "0", "--max-poll-records", "0")...)
		}},
		{"librdkafka", func(t *testing.T, name, group string) *proc {
			// librdkafka's default assignors.
			return confluentKafka(t, name, append(common(group), "--client-id", name, "--session-ms", "0", "--assignor", "range,roundrobin")...)
		}},
		{"kafkajs", func(t *testing.T, name, group string) *proc {
			return kafkaJS(t, name, append(common(group), "--client-id", name, "--session-ms", "0")...)
		}},
		{"franz_go", func(t *testing.T, name, group string) *proc {
			// franz-go's default balancer.
			return franzGo(t, name, "consume", append(common(group), "-client-id", name, "-session-ms", "0", "-balancer", "cooperative-sticky")...)
		}},
	}
	producer := franzGo(t, "producer", "produce", "-bootstrap", bs, "-topic", topic,
		"-count", itoa(int(d/(50*time.Millisecond))+2000), "-every", "50ms")
	var members []*proc
	for _, f := range families {
		for _, m := range []string{"a", "b"} {
			members = append(members, f.start(t, f.name+"-"+m, groupOf(f.name)))
		}
	}
	for _, m := range members {
		m.waitFor(0, 2*time.Minute, m.name+" assigned", func(e event) bool { return e.Name == "assigned" })
	}
	t.Logf("every member assigned; running for %s", d)
	time.Sleep(d)
	fs := liveDiagnosis(t, proxyAdmin)
	b, _ := json.MarshalIndent(fs, "", "  ")
	writeRun(t, "findings.json", b)
	// The paced producer retries each record until acknowledged and does
	// not stop on SIGTERM mid-pace; it only feeds the topic.
	producer.kill()
	for _, m := range members {
		m.stop(60 * time.Second)
	}

	byFamily := map[string]map[string]int{}
	for _, f := range fs {
		family := "?"
		for _, fam := range families {
			if f.Group == groupOf(fam.name) {
				family = fam.name
			}
		}
		if byFamily[family] == nil {
			byFamily[family] = map[string]int{}
		}
		byFamily[family][f.Severity]++
		switch f.Severity {
		case "warning", "critical":
			t.Errorf("%s finding on a healthy %s group: %s: %s %v", f.Severity, family, f.Kind, f.Explanation, f.Evidence)
		default:
			t.Logf("info finding on %s: %s: %s", family, f.Kind, f.Explanation)
		}
	}
	var rows []healthyRow
	for _, fam := range families {
		t.Logf("%s: findings by severity %v", fam.name, byFamily[fam.name])
		rows = append(rows, healthyRow{family: fam.name, memberMinutes: 2 * d.Minutes(), bySeverity: byFamily[fam.name]})
	}
	table := healthyTable(rows)
	writeRun(t, "healthy.md", []byte(table))
	t.Logf("healthy runs (the accuracy matrix's false findings):\n%s", table)
	k.finish()
}

// liveDiagnosis reads every finding of kproxy's /api/diagnosis, page by
// page.
func liveDiagnosis(t *testing.T, admin string) []liveFinding {
	t.Helper()
	var out []liveFinding
	url := "http://" + admin + "/api/diagnosis?limit=100"
	for url != "" {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, body)
		}
		var doc struct {
			Findings []liveFinding `json:"findings"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("GET %s: %v\n%s", url, err, body)
		}
		out = append(out, doc.Findings...)
		url = ""
		if l := resp.Header.Get("Link"); l != "" {
			next := strings.TrimSuffix(strings.TrimPrefix(strings.SplitN(l, ">", 2)[0], "<"), ">")
			if strings.HasPrefix(next, "/") {
				next = "http://" + admin + next
			}
			url = next
		}
	}
	return out
}
