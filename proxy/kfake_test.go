package proxy

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestProduceConsumeThroughProxy: clients seeded only with kproxy's address
// move 10,000 records through a 3-broker cluster, and never reach a broker
// directly. They dial from 127.0.0.2, kproxy from 127.0.0.1, so any
// connection kfake accepts from 127.0.0.2 is a client that bypassed kproxy.
func TestProduceConsumeThroughProxy(t *testing.T) {
	const topic, records = "records", 10000
	cluster := startKfake(t, 3, kfake.SeedTopics(6, topic))
	p := startProxy(t, testConfig(cluster.ListenAddrs()...), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), dialFrom("127.0.0.2"),
		kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	batch := make([]*kgo.Record, 0, records)
	for i := range records {
		batch = append(batch, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: recordValue(i)})
	}
	if err := producer.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), dialFrom("127.0.0.2"),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := make([]bool, records)
	got := 0
	for got < records {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, records, err)
		}
		fs.EachError(func(topic string, part int32, err error) { t.Errorf("fetch %s[%d]: %v", topic, part, err) })
		fs.EachRecord(func(r *kgo.Record) {
			i, err := strconv.Atoi(string(r.Key))
			if err != nil || i < 0 || i >= records {
				t.Fatalf("record key %q: not one we produced", r.Key)
			}
			if want := recordValue(i); string(r.Value) != string(want) {
				t.Fatalf("record %d value %q; want %q", i, r.Value, want)
			}
			if seen[i] {
				t.Fatalf("record %d consumed twice", i)
			}
			seen[i] = true
			got++
		})
	}

	var fromProxy int
	for _, remote := range cluster.Accepted() {
		host, _, _ := net.SplitHostPort(remote)
		if host == "127.0.0.2" {
			t.Errorf("kfake accepted a connection from %s: a client bypassed kproxy", remote)
		}
		fromProxy++
	}
	if fromProxy == 0 {
		t.Error("kfake accepted no connection at all")
	}
	st := p.Stats()
	if st.ConnectionsTotal < 4 {
		t.Errorf("proxy served %d connections; want the bootstrap ones and at least one per broker", st.ConnectionsTotal)
	}
	if st.CorrelationMismatches != 0 || st.RewriteFailures != 0 {
		t.Errorf("stats %+v: want no mismatches and no rewrite failures", st)
	}
}

func recordValue(i int) []byte {
	return fmt.Appendf(nil, "value-%d-%x", i, i*7919)
}

// TestSASLForwardedNeverObserved: a SASL/PLAIN client works through kproxy,
// and no SaslHandshake or SaslAuthenticate exchange reaches an observer.
func TestSASLForwardedNeverObserved(t *testing.T) {
	cluster := startKfake(t, 1, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "secret"),
		kfake.SeedTopics(1, "sasl"))
	rec := &recorder{}
	p := startProxy(t, testConfig(cluster.ListenAddrs()...), nil, rec)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.DefaultProduceTopic("sasl"),
		kgo.SASL(plain.Auth{User: "admin", Pass: "secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce with SASL through kproxy: %v", err)
	}
	waitFor(t, 10*time.Second, "the observer to see the client's exchanges", func() bool {
		xs, _ := rec.snapshot()
		return len(xs) > 0
	})
	xs, _ := rec.snapshot()
	for _, x := range xs {
		if x.APIKey == 17 || x.APIKey == 36 {
			t.Errorf("observer saw a SASL exchange (api key %d)", x.APIKey)
		}
		if bytes.Contains(x.Request, []byte("secret")) {
			t.Errorf("observer saw the password in a %d request", x.APIKey)
		}
	}
}
