//go:build integration

package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/internal/testkafka"
)

// brokerSwitch stands between kproxy and a kfake broker on the port the
// broker advertises, so that the broker can be stopped and started again
// on that port with its data kept (a restarted kfake would be a new
// cluster with new topic ids).
type brokerSwitch struct {
	addr, target string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
	wg    sync.WaitGroup
}

// start listens on the advertised address and forwards to the broker.
func (s *brokerSwitch) start(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", s.target)
			if err != nil {
				c.Close()
				continue
			}
			s.mu.Lock()
			s.conns = append(s.conns, c, up)
			s.mu.Unlock()
			s.wg.Add(2)
			go func() { defer s.wg.Done(); io.Copy(up, c); up.Close() }()
			go func() { defer s.wg.Done(); io.Copy(c, up); c.Close() }()
		}
	}()
}

// stop is the broker going down: its port refuses, its connections reset.
func (s *brokerSwitch) stop() {
	s.mu.Lock()
	s.ln.Close()
	for _, c := range s.conns {
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.wg.Wait()
}

// advertisedListener is a listener whose Addr is another address: kfake
// advertises it in Metadata.
type advertisedListener struct {
	net.Listener
	addr net.Addr
}

func (l advertisedListener) Addr() net.Addr { return l.addr }

// TestBrokerOutageRetried: a franz-go producer with the default (unlimited)
// record retries produces through kproxy while its broker is down for two
// seconds, then back on the same port: every record is acknowledged,
// none fails. Before kproxy reset the client connections it could not
// forward, franz-go saw ErrFirstReadEOF and failed records.
func TestBrokerOutageRetried(t *testing.T) {
	advertised := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: freePort(t)}
	var real string
	testkafka.Start(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "outage"),
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			real = ln.Addr().String()
			return advertisedListener{ln, advertised}, nil
		}))
	sw := &brokerSwitch{addr: advertised.String(), target: real}
	sw.start(t)
	t.Cleanup(sw.stop)

	p := startProxy(t, testConfig(advertised.String()), nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.DefaultProduceTopic("outage"),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatalf("produce before the outage: %v", err)
	}

	sw.stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	const records = 40
	for i := range records {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
		})
		time.Sleep(50 * time.Millisecond)
	}
	sw.start(t)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d records failed across the outage; first: %v", len(failed), records, failed[0])
	}
	if p.Stats().UpstreamDialFailures == 0 {
		t.Error("no dial failure counted: the outage did not reach kproxy")
	}
}

// retryCounter is a kgo.Logger counting the requests franz-go retries.
type retryCounter struct{ retries atomic.Int64 }

func (l *retryCounter) Level() kgo.LogLevel { return kgo.LogLevelDebug }
func (l *retryCounter) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if msg == "retrying request" {
		l.retries.Add(1)
	}
}

// TestBrokerDownRequestRetried: a franz-go request (Metadata, through kadm)
// made while the broker is down meets kproxy's reset, which franz-go
// retries as it would a broker that went away. An orderly close would have
// failed it at once with ErrFirstReadEOF ("is TLS missing?"), not retried.
func TestBrokerDownRequestRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p := startProxy(t, fakeConfig(dead), zap.NewNop())
	log := &retryCounter{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.WithLogger(log),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).ListTopics(ctx)
	if err == nil {
		t.Fatal("ListTopics succeeded with the broker down")
	}
	var eof *kgo.ErrFirstReadEOF
	if errors.As(err, &eof) {
		t.Fatalf("ListTopics: %v; want a retried reset, not ErrFirstReadEOF", err)
	}
	if log.retries.Load() == 0 {
		t.Fatalf("ListTopics failed without a retry: %v", err)
	}
	t.Logf("franz-go retried %d times, then: %v", log.retries.Load(), err)
}
