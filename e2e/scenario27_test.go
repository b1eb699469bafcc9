//go:build e2e

package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestScenario27: a Kafka Streams application with
// processing.guarantee=exactly_once_v2 (StreamsApp) reads 1,500 records of 25
// keys from a three-partition input topic, writes each with its value
// upper-cased to an output topic, and each key's running count (a KTable,
// record cache off) to a counts topic. Once it has committed its input to the
// end it is closed, and both topics are read back from the broker with
// read_committed: the output must hold every input record once, upper-cased,
// on the input's partition, in the input's order; the counts of each key must
// be exactly 1, 2, ... n. Run directly and through kproxy: both runs must
// write the same records in the same order on every partition.
func TestScenario27(t *testing.T) {
	const n, keys = 1500, 25
	type outcome struct{ output, counts map[int32][]string }
	direct, proxied, ok := bothWays(t, func(t *testing.T, l *leg) outcome {
		input, output, counts := "streams_in_"+l.name, "streams_out_"+l.name, "streams_counts_"+l.name
		app := "streams_app_27_" + l.name
		freshTopic(t, input, 3, app)
		freshTopic(t, output, 3, "")
		freshTopic(t, counts, 3, "")
		deleteTopics(t, app+"-counts-store-changelog")
		produceDirect(t, input, n, func(i int) (string, string) {
			return fmt.Sprintf("k%d", i%keys), fmt.Sprintf("record-%d-of-key-%d", i, i%keys)
		})
		in := readBack(t, input, false)

		st := l.client(javaClient(t, "streams", "streams", "--bootstrap", l.bs, "--app-id", app, "--input", input,
			"--output", output, "--counts", counts, "--state-dir", runDir(t)+"/streams-state",
			"--client-id", "java-streams"))
		st.waitFor(0, 90*time.Second, "the application RUNNING", func(e event) bool {
			return e.Name == "state" && e.State == "RUNNING"
		})
		// Done when the application's committed input offsets (committed
		// in the transactions that wrote the output) reach the input's end.
		adm := admin(t)
		deadline := time.Now().Add(90 * time.Second)
		for {
			failOnExit(t, st)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			offs, err := adm.FetchOffsets(ctx, app)
			cancel()
			caught := err == nil
			for p, rs := range in {
				o, found := offs.Lookup(input, p)
				caught = caught && found && o.Err == nil && o.At >= rs[len(rs)-1].Offset+1
			}
			if caught {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the application did not commit its input to the end within 90 s (committed %v, %v)\n%s", offs, err, st.tail())
			}
			time.Sleep(500 * time.Millisecond)
		}
		st.stop(60 * time.Second)
		if e := st.waitFor(0, 0, "closed", func(e event) bool { return e.Name == "closed" }); e.State != "NOT_RUNNING" || st.has("error") {
			t.Fatalf("the application closed in state %s\n%s", e.State, st.tail())
		}

		out, cnt := readBack(t, output, true), readBack(t, counts, true)
		// The output: the input, upper-cased, partition by partition.
		want := map[int32][]string{}
		for p, rs := range in {
			for _, r := range rs {
				want[p] = append(want[p], r.Key+"="+strings.ToUpper(r.Value))
			}
		}
		if d := diffPartitions(out.values(), want); d != "" {
			t.Errorf("output topic: %d records; want the %d input records upper-cased, in order:\n%s", out.count(), n, d)
		}
		// The counts: 1..n of each key, on the key's input partition.
		inputPartition := map[string]int32{}
		for p, rs := range in {
			for _, r := range rs {
				inputPartition[r.Key] = p
			}
		}
		seen := map[string]int64{}
		bad := 0
		for p, rs := range cnt {
			for _, r := range rs {
				c := countOf(r)
				if c != seen[r.Key]+1 || inputPartition[r.Key] != p {
					if bad++; bad <= 5 {
						t.Errorf("counts topic: partition %d offset %d: key %s count %d after %d (key's input partition %d)", p, r.Offset, r.Key, c, seen[r.Key], inputPartition[r.Key])
					}
				}
				seen[r.Key] = c
			}
		}
		if cnt.count() != n || len(seen) != keys || bad > 0 {
			t.Errorf("counts topic: %d updates of %d keys, %d out of sequence; want %d of %d, none", cnt.count(), len(seen), bad, n, keys)
		}
		t.Logf("%s: %d input records; output %d records, counts %d updates of %d keys", l.name, n, out.count(), cnt.count(), len(seen))
		l.check(t, app)
		// Counts as numbers, so that failure messages read.
		cv := map[int32][]string{}
		for p, rs := range cnt {
			for _, r := range rs {
				cv[p] = append(cv[p], fmt.Sprintf("%s=%d", r.Key, countOf(r)))
			}
		}
		return outcome{out.values(), cv}
	})
	if ok {
		if d := diffPartitions(proxied.output, direct.output); d != "" {
			t.Errorf("through kproxy the output topic differs from the direct run's:\n%s", d)
		}
		if d := diffPartitions(proxied.counts, direct.counts); d != "" {
			t.Errorf("through kproxy the counts topic differs from the direct run's:\n%s", d)
		}
	}
}

// countOf is the count a counts record holds (Streams' Long serde: 8 bytes,
// big-endian), or -1 when it holds none.
func countOf(r rec) int64 {
	if len(r.Value) != 8 {
		return -1
	}
	return int64(binary.BigEndian.Uint64([]byte(r.Value)))
}
