//go:build integration

package main

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/pipeline"
)

// stall holds the pipeline up once, for d, at the first Heartbeat it is
// handed after armed is closed: the proxy's queue fills behind it.
type stall struct {
	d     time.Duration
	armed chan struct{}
	once  sync.Once
	done  chan struct{}
}

func (s *stall) Append(x *decode.Exchange) {
	select {
	case <-s.armed:
	default:
		return
	}
	if x.APIKey == int16(kmsg.Heartbeat) {
		s.once.Do(func() {
			time.Sleep(s.d)
			close(s.done)
		})
	}
}

func (s *stall) Dropped(uint64, time.Time) {}

// TestServeLaggingPipeline: a healthy group of two members heartbeating
// every 300 ms with a session timeout of 3 s, while serve's pipeline is
// held up for 5 s. The diagnosis' clock moves only with what the pipeline
// has been handed (exchanges and the queue's ticks, in order), so the
// live findings equal those of `kproxy diagnose` on the journal, and no
// member is warned about: its heartbeats were queued, not missing.
func TestServeLaggingPipeline(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(2, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	cfg := testConfig(t, c.ListenAddrs()...)
	cfg.Journal = filepath.Join(t.TempDir(), "journal")
	st := &stall{d: 5 * time.Second, armed: make(chan struct{}), done: make(chan struct{})}
	s, stop := startServerLog(t, cfg, serveHooks{exchanges: []pipeline.ExchangeConsumer{st}}, zap.NewNop())

	addr := s.proxy.Addr().String()
	a := startDiagMember(t, addr, "lag", "lag-a", []string{"t"})
	a.groupMeta(t)
	b := startDiagMember(t, addr, "lag", "lag-b", []string{"t"})
	b.groupMeta(t)
	waitGeneration(t, a, 2)
	close(st.armed)
	select {
	case <-st.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the pipeline was never held up: no Heartbeat reached it")
	}
	time.Sleep(2 * time.Second) // the pipeline catches up, and ticks
	a.stop()
	b.stop()
	if err := stop(); err != nil {
		t.Fatalf("run() = %v; want nil", err)
	}

	fs := s.obs.story.Findings()
	for _, f := range fs {
		if f.Kind == diagnose.SessionTimeoutWarning {
			t.Errorf("live finding %s on a healthy member: the diagnosis overtook the queue", f.ID)
		}
	}
	sameAsJournal(t, fs, cfg)
}
