package proxy

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestFetchRequestsObserved: a consumer reads records through kproxy; each
// Fetch request is handed to the observers alone (no response, no
// response time) and decodes to the consumer's positions, which only move
// forward, while every record arrives intact through the streamed
// responses.
func TestFetchRequestsObserved(t *testing.T) {
	const n = 200
	cluster := startKfake(t, 1, kfake.SeedTopics(1, "f"))
	rec := &recorder{}
	p := startProxy(t, testConfig(cluster.ListenAddrs()...), nil, rec)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.DefaultProduceTopic("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "record-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.ClientID("fetcher"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"f": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(2<<10), kgo.FetchMaxPartitionBytes(2<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got int
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Appendf(nil, "record-%d", got); !bytes.Equal(r.Value, want) || r.Offset != int64(got) {
				t.Fatalf("record %d: offset %d value %q; want %q", got, r.Offset, r.Value, want)
			}
			got++
		})
	}

	var fetches []*decode.FetchRequest
	waitFor(t, 10*time.Second, "a Fetch request past the first records", func() bool {
		xs, _ := rec.snapshot()
		fetches = fetches[:0]
		for _, x := range xs {
			if x.APIKey != 1 {
				continue
			}
			if x.Response != nil || !x.ResponseAt.IsZero() || x.ClientID != "fetcher" {
				t.Fatalf("fetch exchange with response %d bytes at %v, client %q; want the request alone from fetcher",
					len(x.Response), x.ResponseAt, x.ClientID)
			}
			fr, err := decode.DecodeFetchRequest(x)
			if err != nil {
				t.Fatalf("observed fetch request: %v", err)
			}
			fetches = append(fetches, fr)
		}
		return len(fetches) >= 2
	})
	last := int64(-1)
	for _, fr := range fetches {
		for _, ft := range fr.Topics {
			for _, fp := range ft.Partitions {
				if fp.FetchOffset < last {
					t.Errorf("fetch offset %d after %d; want positions that only move forward", fp.FetchOffset, last)
				}
				last = fp.FetchOffset
			}
		}
	}
	if last <= 0 {
		t.Errorf("last observed fetch offset %d; want the consumer's position past the first records", last)
	}
}

// TestLargeFetchRequestStreamed: a Fetch request larger than
// maxObservedRequest is streamed like any unobserved frame and not handed
// to the observers; a small one is, without its response.
func TestLargeFetchRequestStreamed(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	rec := &recorder{}
	p := startProxy(t, fakeConfig(broker.addr()), nil, rec)
	c := dial(t, p.Addr().String())
	rng := rand.New(rand.NewPCG(7, 7))
	for corr, pad := range []int{64, maxObservedRequest + 1} {
		if _, err := c.Write(testRequest(rng, 1, int32(corr), 128, 0, pad)); err != nil {
			t.Fatal(err)
		}
		if _, err := readTestFrame(c); err != nil {
			t.Fatalf("round trip of a %d-byte Fetch: %v", pad, err)
		}
	}
	waitFor(t, 10*time.Second, "the small Fetch to be observed", func() bool {
		xs, _ := rec.snapshot()
		return len(xs) >= 1
	})
	time.Sleep(100 * time.Millisecond)
	xs, _ := rec.snapshot()
	if len(xs) != 1 || xs[0].CorrelationID != 0 || xs[0].Response != nil {
		t.Fatalf("observed %d exchanges (first corr %d, response %d bytes); want only the small Fetch, without response",
			len(xs), xs[0].CorrelationID, len(xs[0].Response))
	}
}
