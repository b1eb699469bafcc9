package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOversizedGroupFrame: a group request above MaxGroupFrameSize closes
// its connection before any of it reaches the broker, counted and logged
// naming the setting; one at the limit, and a Produce above it, go
// through.
func TestOversizedGroupFrame(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	log, logs := observedLogger()
	cfg := fakeConfig(broker.addr())
	cfg.MaxGroupFrameSize = 1 << 20
	p := startProxy(t, cfg, log)
	rng := rand.New(rand.NewPCG(1, 2))
	frame := func(key int16, corr int32, size int) []byte {
		f := testRequest(rng, key, corr, 10, 1, 0)
		pad := size - (len(f) - 4)
		f = append(f, make([]byte, pad)...)
		binary.BigEndian.PutUint32(f, uint32(size))
		return f
	}
	send := func(c interface{ Write([]byte) (int, error) }, f []byte) {
		t.Helper()
		if _, err := c.Write(f); err != nil {
			t.Fatal(err)
		}
	}

	good := dial(t, p.Addr().String())
	for corr, f := range [][]byte{frame(11, 0, 1<<20), frame(0, 1, 2<<20)} { // JoinGroup at the limit, Produce above it
		send(good, f)
		if _, err := readTestFrame(good); err != nil {
			t.Fatalf("request %d: %v", corr, err)
		}
	}
	bad := dial(t, p.Addr().String())
	first := frame(12, 0, 64) // a Heartbeat, forwarded
	send(bad, first)
	if _, err := readTestFrame(bad); err != nil {
		t.Fatal(err)
	}
	send(bad, frame(11, 1, 1<<20+1)[:64<<10]) // a JoinGroup one byte over, its first 64 KiB
	expectClosed(t, bad)
	if got := p.Stats().OversizedFrames; got != 1 {
		t.Errorf("oversized frames %d; want 1", got)
	}
	lines := logs.FilterMessageSnippet("max-group-frame-size").All()
	if len(lines) != 1 || lines[0].ContextMap()["api"] != "JoinGroup" {
		t.Errorf("log lines naming max-group-frame-size %v; want one, for a JoinGroup", lines)
	}
	// What the broker read on the refused connection: the Heartbeat only.
	want := sha256.Sum256(first)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case h := <-broker.hashes:
			if string(h.requests) == string(want[:]) {
				return
			}
		case <-deadline:
			t.Fatal("the broker never saw the refused connection close with the Heartbeat alone")
		}
	}
}

// sizeHook records the largest request of each API a client wrote.
type sizeHook struct {
	mu  sync.Mutex
	max map[int16]int
}

func (h *sizeHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, _ error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.max[key] = max(h.max[key], n)
}

// TestRealGroupRequestsPass: two consumers subscribed to 10,000 topics
// whose names are 249 bytes long (Kafka's longest), with Java's default
// assignors (range and cooperative-sticky, so two protocols), form their
// group through kproxy at the default MaxGroupFrameSize. It logs the
// largest JoinGroup and SyncGroup they wrote. KPROXY_GROUP_SIZES set to
// "TOPICS,PARTITIONS,MEMBERS,NAME_BYTES" measures another shape
// (docs/benchmarks.md, Group request sizes).
func TestRealGroupRequestsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 topics: skipped with -short")
	}
	topics, partitions, members, nameLen := 10000, 1, 2, 249
	if s := os.Getenv("KPROXY_GROUP_SIZES"); s != "" {
		if _, err := fmt.Sscanf(s, "%d,%d,%d,%d", &topics, &partitions, &members, &nameLen); err != nil {
			t.Fatalf("KPROXY_GROUP_SIZES=%q: %v; want TOPICS,PARTITIONS,MEMBERS,NAME_BYTES", s, err)
		}
	}
	names := make([]string, topics)
	for i := range names {
		n := fmt.Sprintf("t%05d-", i)
		names[i] = n + strings.Repeat("x", max(0, nameLen-len(n)))
	}
	c := startKfake(t, 1, kfake.SeedTopics(int32(partitions), names...))
	p := startProxy(t, testConfig(c.ListenAddrs()...), nil)
	hook := &sizeHook{max: map[int16]int{}}
	var assigned sync.WaitGroup
	for range members {
		assigned.Add(1)
		var once sync.Once
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.ConsumerGroup("wide"), kgo.ConsumeTopics(names...),
			kgo.Balancers(kgo.RangeBalancer(), kgo.CooperativeStickyBalancer()), kgo.WithHooks(hook),
			kgo.SessionTimeout(time.Minute), kgo.RebalanceTimeout(2*time.Minute),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { once.Do(assigned.Done) }))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
		t.Cleanup(func() { cancel(); <-done; cl.Close() })
	}
	ok := make(chan struct{})
	go func() { assigned.Wait(); close(ok) }()
	select {
	case <-ok:
	case <-time.After(3 * time.Minute):
		t.Fatal("the group never formed through kproxy")
	}
	if st := p.Stats(); st.OversizedFrames != 0 {
		t.Fatalf("%d group requests refused; want none at the default limit", st.OversizedFrames)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	join, sync := hook.max[int16(kmsg.JoinGroup)], hook.max[int16(kmsg.SyncGroup)]
	t.Logf("%d topics of %d partitions, names of %d bytes, %d members: largest JoinGroup %d bytes, SyncGroup %d bytes (limit %d)",
		topics, partitions, nameLen, members, join, sync, DefaultMaxGroupFrameSize)
	if join == 0 || sync == 0 {
		t.Fatalf("no JoinGroup or SyncGroup written (%d, %d)", join, sync)
	}
}
