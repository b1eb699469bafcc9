//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerCmd runs e2e/broker.sh with cmd (stop, resume).
func brokerCmd(t *testing.T, cmd string) {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join(e2eDir, "broker.sh"), cmd).CombinedOutput()
	if err != nil {
		t.Fatalf("broker.sh %s: %v\n%s", cmd, err, out)
	}
}

// pythonProducer runs e2e/python/producer.py with lib (kafka-python or
// confluent).
func pythonProducer(t *testing.T, name, lib string, args ...string) *proc {
	t.Helper()
	argv := []string{filepath.Join(cacheDir, "venv", "bin", "python"), "-u",
		filepath.Join(e2eDir, "python", "producer.py"), "--lib", lib}
	return startProc(t, name, nil, append(argv, args...)...)
}

// countDistinct reads topic from the start through bootstrap until it has
// seen want distinct values or the timeout passes, and returns the
// distinct values and the duplicates it saw.
func countDistinct(t *testing.T, bootstrap, topic string, want int, timeout time.Duration) (distinct, dups int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for len(seen) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				dups++
			}
			seen[string(r.Value)] = true
		})
	}
	return len(seen), dups
}

// TestScenario9 is a broker outage: four producers (franz-go, Java,
// kafka-python, confluent-kafka) send one record every 40 ms through
// kproxy while the broker is stopped for 10 s and started again on its
// data, and four consumers of the same libraries, each in its own group,
// read those topics through kproxy across the outage. Every record must be
// acknowledged (none failed), read by its consumer, and read back through
// kproxy: nothing lost, as with a direct connection (E2E_MODE=direct runs
// the same against the broker).
func TestScenario9(t *testing.T) {
	const n = 500
	type producer struct {
		name, topic string
		start       func(bs, topic string) *proc
		// consume starts the same library's consumer of topic, in group.
		consume func(bs, topic, group string) *proc
	}
	producers := []producer{
		{"franz-go", "outage-franz", func(bs, topic string) *proc {
			return franzGo(t, "franz-producer", "produce", "-bootstrap", bs, "-topic", topic, "-count", itoa(n), "-every", "40ms")
		}, func(bs, topic, group string) *proc {
			return franzGo(t, "franz-consumer", "consume", "-bootstrap", bs, "-topic", topic, "-group", group)
		}},
		{"java", "outage-java", func(bs, topic string) *proc {
			return javaClient(t, "java-producer", "produce", "--bootstrap", bs, "--topic", topic, "--count", itoa(n), "--every-ms", "40")
		}, func(bs, topic, group string) *proc {
			return javaClient(t, "java-consumer", "consume", "--bootstrap", bs, "--topic", topic, "--group", group)
		}},
		{"kafka-python", "outage-kafka-python", func(bs, topic string) *proc {
			return pythonProducer(t, "kafka-python-producer", "kafka-python", "--bootstrap", bs, "--topic", topic, "--count", itoa(n), "--every-ms", "40")
		}, func(bs, topic, group string) *proc {
			return kafkaPython(t, "kafka-python-consumer", "--bootstrap", bs, "--topic", topic, "--group", group)
		}},
		{"confluent-kafka", "outage-confluent", func(bs, topic string) *proc {
			return pythonProducer(t, "confluent-producer", "confluent", "--bootstrap", bs, "--topic", topic, "--count", itoa(n), "--every-ms", "40")
		}, func(bs, topic, group string) *proc {
			return confluentKafka(t, "confluent-consumer", "--bootstrap", bs, "--topic", topic, "--group", group)
		}},
	}
	for _, p := range producers {
		freshTopic(t, p.topic, 1, "")
	}
	k := startKproxy(t, false)
	bs := bootstrap(k)
	// Whatever happens, leave the broker running for the next scenario.
	t.Cleanup(func() { brokerCmd(t, "resume") })

	procs := make([]*proc, len(producers))
	consumers := make([]*proc, len(producers))
	// The consumers own their partitions before the first record, so
	// that they read across the outage rather than after it.
	for i, p := range producers {
		consumers[i] = p.consume(bs, p.topic, p.topic+"-group")
	}
	for _, c := range consumers {
		c.waitFor(0, 60*time.Second, "assigned", func(e event) bool { return e.Name == "assigned" && len(e.Partitions) > 0 })
	}
	for i, p := range producers {
		procs[i] = p.start(bs, p.topic)
	}
	for _, pr := range procs {
		pr.waitFor(0, 60*time.Second, "started", func(e event) bool { return e.Name == "started" })
	}
	time.Sleep(5 * time.Second)
	down := time.Now()
	brokerCmd(t, "stop")
	time.Sleep(10 * time.Second)
	brokerCmd(t, "resume")
	t.Logf("broker unavailable for %v (stopped 10 s, then restarted)", time.Since(down).Round(100*time.Millisecond))

	for i, p := range producers {
		procs[i].waitDone(4 * time.Minute)
		ev := procs[i].waitFor(0, 0, "produced", func(e event) bool { return e.Name == "produced" })
		distinct, dups := countDistinct(t, bs, p.topic, n, 60*time.Second)
		t.Logf("%-16s sent %d, failed %d, read back %d distinct (%d duplicates)", p.name, ev.Count, ev.Failed, distinct, dups)
		if ev.Failed != 0 || ev.Count != n {
			t.Errorf("%s: %d of %d records failed across the outage: %s", p.name, ev.Failed, ev.Count, ev.Error)
		}
		if distinct != n {
			t.Errorf("%s: read back %d distinct records; want %d (records lost: %d)", p.name, distinct, n, n-distinct)
		}
	}
	// Each consumer has read its topic across the outage: every record,
	// some perhaps twice (offsets are committed only on revocation).
	for i, p := range producers {
		c := consumers[i]
		last := c.waitFor(0, 90*time.Second, "all records read", func(e event) bool {
			return e.Name == "polled" && e.Distinct >= n
		})
		errs := 0
		for _, e := range c.snapshot() {
			if e.Name == "error" {
				errs++
			}
		}
		t.Logf("%-16s consumer read %d distinct of %d (%d in all, %d error events), the last %v after the outage began",
			p.name, last.Distinct, n, last.Total, errs, last.At().Sub(down).Round(100*time.Millisecond))
		if last.Distinct != n {
			t.Errorf("%s consumer: %d distinct values; want %d", p.name, last.Distinct, n)
		}
		c.stop(30 * time.Second)
	}
	k.stop()
}
