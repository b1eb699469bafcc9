package testkafka

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStartRecording produces through a recording cluster from 127.0.0.2
// and finds that address among those it accepted.
func TestStartRecording(t *testing.T) {
	c := StartRecording(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.Dialer(d.DialContext))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 5*time.Second, "a connection from 127.0.0.2", func() bool {
		for _, a := range c.Accepted() {
			if host, _, _ := net.SplitHostPort(a); host == "127.0.0.2" {
				return true
			}
		}
		return false
	})
}
