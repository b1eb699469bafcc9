package fleet

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/testkafka"
)

const testTopic = "kproxy-events"

// startCluster starts a kfake cluster on 127.0.0.1 for the test.
func startCluster(t testing.TB) *kfake.Cluster {
	t.Helper()
	return testkafka.Start(t, kfake.NumBrokers(1))
}

// newTestPublisher publishes to c's events topic (created here) as
// instance zone-a, with a buffer of maxRecords.
func newTestPublisher(t *testing.T, c *kfake.Cluster, maxRecords int) *Publisher {
	t.Helper()
	p, err := NewPublisher(PublisherConfig{Topic: testTopic, Instance: "zone-a", Partitions: 2,
		Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, MaxBufferedRecords: maxRecords}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := EnsureTopic(ctx, p.cl, testTopic, 2, time.Hour); err != nil {
		t.Fatal(err)
	}
	return p
}

// publish hands the publisher the heartbeat named id, of group g.
func publish(p *Publisher, id uint64, at time.Time) {
	p.AddDecoded(&decode.Decoded{X: heartbeat(id, "g", at), Events: []decode.Event{{Group: "g"}}})
}

// readMerged reads the whole topic through a Source: "id" per exchange,
// "+n" for losses.
func readMerged(t *testing.T, c *kfake.Cluster) (string, SourceStats) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src, err := OpenSource(ctx, SourceConfig{Topic: testTopic, Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out []string
	for {
		x, d, err := src.Next()
		if d > 0 {
			out = append(out, fmt.Sprintf("+%d", d))
		}
		if err == io.EOF {
			return strings.Join(out, " "), src.Stats()
		}
		if err != nil {
			t.Fatal(err)
		}
		if x != nil { // not a tick
			out = append(out, fmt.Sprint(x.ConnID))
		}
	}
}

// TestPublisherSlowCluster: while the cluster does not answer Produce, the
// publisher keeps its bounded buffer, drops the rest at once (counted) and
// publishes a gap record in their place once the cluster answers again;
// the topic read back tells the same.
func TestPublisherSlowCluster(t *testing.T) {
	c := startCluster(t)
	p := newTestPublisher(t, c, 5)
	release := make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	for i := range 100 {
		publish(p, uint64(i), ms(i)) // returns at once: the test would hang otherwise
	}
	if st := p.Stats(); st.Dropped != 95 || st.Published != 0 {
		t.Errorf("with the cluster stalled: %+v; want 95 dropped, none published yet", st)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for p.Stats().Published < 5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	publish(p, 1000, ms(1000))
	p.Close(5 * time.Second)
	if st := p.Stats(); st.Dropped != 95 || st.Published != 7 {
		t.Errorf("after: %+v; want 95 dropped, 7 published (5 exchanges, the gap, 1 exchange)", st)
	}
	got, st := readMerged(t, c)
	if want := "0 1 2 3 4 +95 1000"; got != want {
		t.Errorf("topic read back: %q; want %q", got, want)
	}
	if st.Lost != 95 || st.Instances != 1 {
		t.Errorf("source stats %+v; want 95 lost, 1 instance", st)
	}
}

// TestPublisherClusterDown: with no cluster at all, publishing never
// blocks, and what the buffer cannot hold is counted.
func TestPublisherClusterDown(t *testing.T) {
	p, err := NewPublisher(PublisherConfig{Topic: testTopic, Instance: "zone-a",
		Client: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, MaxBufferedRecords: 10}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		publish(p, uint64(i), ms(i))
	}
	if st := p.Stats(); st.Dropped != 990 {
		t.Errorf("%+v; want 990 dropped", st)
	}
	p.Close(100 * time.Millisecond)
	if st := p.Stats(); st.Dropped != 1000 || st.Published != 0 {
		t.Errorf("after Close: %+v; want all 1000 dropped", st)
	}
}

// TestPublisherRefusesSASL: SASL exchanges, by api key or by the request
// frame's own key, are never published.
func TestPublisherRefusesSASL(t *testing.T) {
	c := startCluster(t)
	p := newTestPublisher(t, c, 0)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00alice\x00secret")
	authResp := kmsg.NewPtrSASLAuthenticateResponse()
	mislabelled := frame(auth, authResp, 3, ms(3))
	mislabelled.APIKey = int16(kmsg.Heartbeat)
	for _, x := range []*decode.Exchange{
		frame(hs, kmsg.NewPtrSASLHandshakeResponse(), 1, ms(1)),
		frame(auth, authResp, 2, ms(2)),
		mislabelled,
	} {
		p.AddDecoded(&decode.Decoded{X: x})
	}
	publish(p, 4, ms(4))
	p.Close(5 * time.Second)
	if st := p.Stats(); st.Redacted != 3 || st.Published != 1 {
		t.Errorf("%+v; want 3 redacted, 1 published", st)
	}
	if got, _ := readMerged(t, c); got != "4" {
		t.Errorf("topic holds %q; want only the heartbeat 4", got)
	}
	if k := int16(binary.BigEndian.Uint16(mislabelled.Request)); k != int16(kmsg.SASLAuthenticate) {
		t.Fatalf("the mislabelled frame's own key is %d", k)
	}
}
