package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kproxy-dev/kproxy/config"
)

// syncBuffer is a log sink tests read while serve writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}

// TestServeWritesNoPassword: serve with a debug log, a journal, a report
// and the admin server carries a consumer group that authenticates with
// PLAIN, either as itself through kproxy or by kproxy for it (upstream
// SASL); the PLAIN password is then in none of what serve wrote or served,
// while the group's name is in each of the log, journal and report.
func TestServeWritesNoPassword(t *testing.T) {
	const password = "plain-pw-never-written-3b9e"
	for _, tc := range []struct {
		name     string
		upstream bool // kproxy authenticates for the client
	}{
		{"client authenticates as itself", false},
		{"kproxy authenticates upstream", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const topic, group = "pw", "pw-group"
			c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(1, topic), kfake.EnableSASL(),
				kfake.Superuser("PLAIN", "alice", password))
			dir := t.TempDir()
			cfg := testConfig(t, c.ListenAddrs()...)
			cfg.Journal = filepath.Join(dir, "journal")
			cfg.Report = filepath.Join(dir, "report.json")
			opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
			if tc.upstream {
				cfg.UpstreamSASLMechanism, cfg.UpstreamSASLUsername = "PLAIN", "alice"
				cfg.UpstreamSASLPassword = config.Secret(password)
			} else {
				opts = append(opts, kgo.SASL(plain.Auth{User: "alice", Pass: password}.AsMechanism()))
			}
			var logs syncBuffer
			log, err := newLogger(&logs, "json", "debug")
			if err != nil {
				t.Fatal(err)
			}
			s, err := newServer(cfg, log)
			if err != nil {
				t.Fatalf("newServer: %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.run(ctx) }()
			defer func() {
				cancel()
				<-done
			}()

			cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(s.proxy.Addr().String()))...)
			if err != nil {
				t.Fatal(err)
			}
			cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
			defer ccancel()
			if err := cl.ProduceSync(cctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			if fs := cl.PollFetches(cctx); fs.Err() != nil || fs.NumRecords() != 1 {
				t.Fatalf("consume: %d records, %v", fs.NumRecords(), fs.Err())
			}
			if err := cl.CommitUncommittedOffsets(cctx); err != nil {
				t.Fatalf("commit: %v", err)
			}
			cl.Close()

			base := "http://" + s.admin.Addr().String()
			served := map[string]string{}
			for _, page := range []string{"/metrics", "/healthz", "/timeline", "/api/timeline"} {
				served[page] = httpGet(t, base+page)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run() = %v; want nil", err)
			}
			done <- nil

			written := map[string][]byte{"log": logs.Bytes()}
			for name, path := range map[string]string{"report": cfg.Report} {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				written[name] = b
			}
			segs, _ := filepath.Glob(filepath.Join(cfg.Journal, "*"))
			var journal []byte
			for _, f := range segs {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				journal = append(journal, b...)
			}
			written["journal"] = journal
			for name, b := range written {
				if !bytes.Contains(b, []byte(group)) {
					t.Errorf("the %s does not name the group %q: the grep would read nothing", name, group)
				}
			}
			for page, body := range served {
				written["admin "+page] = []byte(body)
			}
			for name, b := range written {
				if bytes.Contains(b, []byte(password)) {
					t.Errorf("the %s holds the PLAIN password", name)
				}
			}
			if tc.upstream && !strings.Contains(string(written["log"]), "authenticating every broker connection as kproxy's own SASL user") {
				t.Error("serve did not log that it authenticates upstream")
			}
		})
	}
}
