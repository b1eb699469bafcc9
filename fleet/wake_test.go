//go:build integration

package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSourceWake: Next, waiting in a long poll of a quiet topic, returns
// at once when woken, with a nil exchange and Tick where it was (no
// tick), and reading goes on after it.
func TestSourceWake(t *testing.T) {
	c := startCluster(t)
	p := newTestPublisher(t, c, 0)
	p.Close(0)
	src, err := OpenSource(context.Background(), SourceConfig{Topic: testTopic, Follow: true,
		Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.FetchMaxWait(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for round := range 2 {
		tick := src.Tick()
		type next struct {
			nilX bool
			err  error
		}
		got := make(chan next, 1)
		go func() {
			x, _, err := src.Next()
			got <- next{x == nil, err}
		}()
		time.Sleep(300 * time.Millisecond) // into its poll
		src.Wake()
		select {
		case n := <-got:
			if !n.nilX || n.err != nil {
				t.Fatalf("round %d: woken Next: nil exchange %v, error %v; want a nil exchange and no error", round, n.nilX, n.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Next not woken", round)
		}
		if !src.Tick().Equal(tick) {
			t.Errorf("round %d: a wake moved Tick from %v to %v", round, tick, src.Tick())
		}
	}
}
