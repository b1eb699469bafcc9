//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScenario26: a Java transactional producer, configured as production
// configures one (transactional.id, idempotence, acks=all), writes six
// transactions of 50 records over three partitions, aborting the second and
// the fifth after their records are written; a Java consumer with
// isolation.level=read_committed reads the topic to its end. The consumer
// must read every committed record once, in the producer's order on each
// partition, and no aborted one; read back from the broker without
// isolation, the log must hold the aborted records too (so that their
// absence means something). Run directly and through kproxy: both runs must
// read the same records in the same order.
func TestScenario26(t *testing.T) {
	const txns, per = 6, 50
	aborted := []int{1, 4}
	var abortFlag []string
	for _, a := range aborted {
		abortFlag = append(abortFlag, itoa(a))
	}
	direct, proxied, ok := bothWays(t, func(t *testing.T, l *leg) map[int32][]string {
		topic, group := "txn_topic_"+l.name, "txn_reader_"+l.name
		freshTopic(t, topic, 3, group)

		// The requests the producer sends and their versions, in its log.
		debug := []string{"JAVA_TOOL_OPTIONS=-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.NetworkClient=debug"}
		prod := l.client(javaClientEnv(t, "producer", debug, "txn-produce", "--bootstrap", l.bs, "--topic", topic,
			"--transactional-id", "txn-producer-26-"+l.name, "--transactions", itoa(txns), "--records", itoa(per),
			"--abort", strings.Join(abortFlag, ","), "--client-id", "java-txn-producer"))
		prod.waitDone(90 * time.Second)
		results := map[int]string{}
		for _, e := range prod.snapshot() {
			if e.Name == "txn" {
				results[e.Txn] = e.Result
			}
		}
		for i := range txns {
			want := "committed"
			if slices.Contains(aborted, i) {
				want = "aborted"
			}
			if results[i] != want {
				t.Fatalf("producer: transaction %d %q; want %s\n%s", i, results[i], want, prod.tail())
			}
		}
		// What the producer wrote, by partition in offset order: all of it,
		// and the committed part.
		written, committed := byPartition{}, byPartition{}
		for _, e := range prod.snapshot() {
			if e.Name != "record" {
				continue
			}
			r := rec{e.Offset, e.Key, e.Value}
			written[e.Partition] = append(written[e.Partition], r)
			if !slices.Contains(aborted, e.Txn) {
				committed[e.Partition] = append(committed[e.Partition], r)
			}
		}
		for _, b := range []byPartition{written, committed} {
			for _, rs := range b {
				slices.SortFunc(rs, func(a, b rec) int { return int(a.Offset - b.Offset) })
			}
		}
		if written.count() != txns*per || committed.count() != (txns-len(aborted))*per {
			t.Fatalf("producer told %d records written, %d committed; want %d, %d", written.count(), committed.count(), txns*per, (txns-len(aborted))*per)
		}

		rd := l.client(javaClient(t, "reader", "txn-read", "--bootstrap", l.bs, "--topic", topic, "--group", group,
			"--client-id", "java-txn-reader", "--timeout-s", "60"))
		rd.waitDone(90 * time.Second)
		done := rd.waitFor(0, 0, "read", func(e event) bool { return e.Name == "read" })
		if !done.Complete {
			t.Errorf("reader: did not reach the end of every partition within 60 s: %s", done)
		}
		read := recordEvents(rd)
		if d := diffPartitions(read.values(), committed.values()); d != "" {
			t.Errorf("the read_committed consumer read %d records, the producer committed %d:\n%s", read.count(), committed.count(), d)
		}
		for _, rs := range read {
			for _, r := range rs {
				for _, a := range aborted {
					if strings.HasPrefix(r.Value, "txn-"+itoa(a)+"-") {
						t.Errorf("the read_committed consumer read a record of aborted transaction %d: %s", a, r)
					}
				}
			}
		}
		if log := readBack(t, topic, false); diffPartitions(log.values(), written.values()) != "" {
			t.Errorf("the broker's log (read_uncommitted) differs from what the producer wrote:\n%s", diffPartitions(log.values(), written.values()))
		}
		t.Logf("%s: %d records in %d transactions written, %d committed; read_committed read %d",
			l.name, written.count(), txns, committed.count(), read.count())
		l.check(t, group)
		return read.values()
	})
	if ok {
		if d := diffPartitions(proxied, direct); d != "" {
			t.Errorf("through kproxy the consumer read other records than directly:\n%s", d)
		}
	}
}
