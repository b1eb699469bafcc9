//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestScenario8 is data integrity: a Java producer writes 100,000 records
// with distinct payloads through kproxy, and a Java consumer reads them all
// back through kproxy: same count, same checksum, no duplicates, no failed
// sends.
func TestScenario8(t *testing.T) {
	const topic, group, n = "integrity", "integrity_reader", "100000"
	freshTopic(t, topic, 3, group)
	k := startKproxy(t, false)
	bs := bootstrap(k)

	prod := javaClient(t, "producer", "produce", "--bootstrap", bs, "--topic", topic, "--count", n)
	prod.waitDone(3 * time.Minute)
	sent := prod.waitFor(0, 0, "produced", func(e event) bool { return e.Name == "produced" })
	if sent.Failed != 0 || sent.Count != 100000 {
		t.Fatalf("producer: %s", sent)
	}

	rd := javaClient(t, "reader", "read", "--bootstrap", bs, "--group", group, "--topic", topic,
		"--expect", n, "--timeout-s", "150")
	rd.waitDone(3 * time.Minute)
	got := rd.waitFor(0, 0, "read", func(e event) bool { return e.Name == "read" })
	if got.Count != sent.Count || got.Checksum != sent.Checksum || got.Duplicates != 0 {
		t.Fatalf("read back %d records, checksum %s, %d duplicates; wrote %d, checksum %s",
			got.Count, got.Checksum, got.Duplicates, sent.Count, sent.Checksum)
	}
	k.stop()
}
