//go:build integration

package fleet

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestSilentInstance: two instances publish with their markers; zone-b is
// killed (its client closed, no stopping marker) while zone-a goes on.
// Read back, zone-b is reported silent from its last record, and the
// groups it published are blind from then; zone-a, which stopped cleanly,
// is not silent.
func TestSilentInstance(t *testing.T) {
	c := startCluster(t)
	a := newTestPublisher(t, c, 0)
	b, err := NewPublisher(PublisherConfig{Topic: testTopic, Instance: "zone-b",
		Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for _, p := range []*Publisher{a, b} {
		go func() { p.Run(ctx); done <- struct{}{} }()
	}
	now := time.Now()
	publish(a, 1, now)
	b.AddDecoded(&decode.Decoded{X: heartbeat(2, "g-b", now), Events: []decode.Event{{Group: "g-b"}}})
	ectx, ecancel := context.WithTimeout(ctx, 10*time.Second)
	defer ecancel()
	if err := b.cl.Flush(ectx); err != nil {
		t.Fatal(err)
	}
	b.cl.Close() // killed: no stopping marker
	// zone-a's markers carry the merged stream's time past SilentAfter.
	time.Sleep(DefaultSilentAfter + 2*MarkerInterval)
	cancel()
	<-done
	<-done
	a.Close(5 * time.Second)

	src, err := OpenSource(context.Background(), SourceConfig{Topic: testTopic, Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var blind []decode.Blind
	for {
		_, _, err := src.Next()
		blind = append(blind, src.TakeBlind()...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	st := src.Stats()
	if len(st.Gaps) != 1 || st.Gaps[0].Instance != "zone-b" || !st.Gaps[0].To.IsZero() {
		t.Fatalf("gaps %+v; want zone-b silent, never heard again", st.Gaps)
	}
	if len(blind) != 1 || blind[0].Group != "g-b" || blind[0].Instance != "zone-b" || !blind[0].At.Equal(st.Gaps[0].From) {
		t.Errorf("blind %+v; want g-b blind from zone-b's last record %s", blind, st.Gaps[0].From)
	}
}
