package demo

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/internal/testkafka"
)

// TestRunDirect plays a shortened scenario straight against kfake and checks
// what the consumers did: the assignments of the seed scenario, and offsets
// committed for every partition.
func TestRunDirect(t *testing.T) {
	c := testkafka.Start(t, kfake.NumBrokers(1), kfake.SeedTopics(Partitions, Topic))

	var mu sync.Mutex
	var lines []string
	opts := Options{
		WorkA: 200 * time.Millisecond, WorkB: 400 * time.Millisecond,
		BJoinsAfter: 1500 * time.Millisecond, BothFor: 2 * time.Second,
		Narrate: func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() },
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Run(ctx, c.ListenAddrs()[0], opts); err != nil {
		t.Fatal(err)
	}

	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"consumer-A assigned [0 1 2]",
		"consumer-A assigned [0 1]",
		"consumer-B assigned [2]",
		"consumer-A committed round_topic[0]=",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("narration lacks %q; got:\n%s", want, got)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offsets, err := kadm.NewClient(cl).FetchOffsets(ctx, Group)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < Partitions; p++ {
		o, ok := offsets.Lookup(Topic, p)
		if !ok || o.At <= 0 {
			t.Errorf("committed offset of %s[%d] = %+v, %v; want > 0", Topic, p, o, ok)
		}
	}
}
