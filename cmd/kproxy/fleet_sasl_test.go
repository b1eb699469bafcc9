//go:build integration

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/fleet"
)

// TestEventsNoSASL: a consumer group authenticating with PLAIN, as itself
// through kproxy or by kproxy for it, runs behind a kproxy publishing to
// the events topic. The topic then holds the group's exchanges and no SASL
// exchange, and the password is in no record. When kproxy authenticates
// upstream, the events topic is on the same cluster, reached with the same
// SASL settings; when clients authenticate as themselves, it is on another
// cluster (events-brokers).
func TestEventsNoSASL(t *testing.T) {
	const password = "plain-pw-never-published-71c2"
	for _, tc := range []struct {
		name     string
		upstream bool
	}{
		{"client authenticates as itself", false},
		{"kproxy authenticates upstream", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const topic, group = "pw", "pw-group"
			c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(1, topic), kfake.EnableSASL(),
				kfake.Superuser("PLAIN", "alice", password))
			cfg := testConfig(t, c.ListenAddrs()...)
			cfg.EventsTopic = fleetTopic
			cfg.EventsPartitions = 1
			events := c
			readOpts := []kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: password}.AsMechanism())}
			opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
			if tc.upstream {
				cfg.UpstreamSASLMechanism, cfg.UpstreamSASLUsername = "PLAIN", "alice"
				cfg.UpstreamSASLPassword = config.Secret(password)
			} else {
				opts = append(opts, kgo.SASL(plain.Auth{User: "alice", Pass: password}.AsMechanism()))
				events = startKfake(t, kfake.NumBrokers(1))
				cfg.EventsBrokers = events.ListenAddrs()
				readOpts = nil
			}
			s, stop := startServer(t, cfg, serveHooks{})
			waitFor(t, "the events topic", func() bool { return s.events.Stats().TopicReady })

			cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(s.proxy.Addr().String()))...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			if fs := cl.PollFetches(ctx); fs.Err() != nil || fs.NumRecords() != 1 {
				t.Fatalf("consume: %d records, %v", fs.NumRecords(), fs.Err())
			}
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatalf("commit: %v", err)
			}
			cl.Close()
			if err := stop(); err != nil {
				t.Fatalf("run() = %v", err)
			}
			st := s.events.Stats()
			if st.Dropped != 0 {
				t.Errorf("%d exchanges dropped; want none", st.Dropped)
			}
			t.Logf("publisher: %+v", st)

			apis := map[int16]int{}
			for _, r := range readTopic(t, events.ListenAddrs(), readOpts) {
				if bytes.Contains(r.Value, []byte(password)) || bytes.Contains(r.Key, []byte(password)) {
					t.Errorf("record at offset %d holds the PLAIN password", r.Offset)
				}
				rec, err := fleet.Decode(r)
				if err != nil {
					t.Fatalf("record at offset %d: %v", r.Offset, err)
				}
				if rec.X != nil {
					apis[rec.X.APIKey]++
				}
			}
			for _, k := range []kmsg.Key{kmsg.SASLHandshake, kmsg.SASLAuthenticate} {
				if apis[int16(k)] > 0 {
					t.Errorf("%d %s exchanges published", apis[int16(k)], k.Name())
				}
			}
			if apis[int16(kmsg.JoinGroup)] == 0 || apis[int16(kmsg.OffsetCommit)] == 0 {
				t.Errorf("published APIs %v; want the group's JoinGroup and OffsetCommit", apis)
			}
			if tc.upstream {
				// replay reads the topic with serve's SASL settings, from its file.
				dir := t.TempDir()
				pw := filepath.Join(dir, "pw")
				file := filepath.Join(dir, "kproxy.yaml")
				if err := os.WriteFile(pw, []byte(password+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte("upstream-sasl-mechanism: PLAIN\nupstream-sasl-username: alice\n"+
					"upstream-sasl-password-file: "+pw+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				out, errOut, err := runKproxySplit(t, "replay", "--from-topic", fleetTopic, "--brokers", c.ListenAddrs()[0],
					"--config", file)
				if err != nil || !strings.Contains(out, group) {
					t.Errorf("replay --from-topic with SASL: %v; stdout %q, stderr %q", err, out, errOut)
				}
			}
		})
	}
}

// readTopic reads every record of the events topic.
func readTopic(t *testing.T, brokers []string, opts []kgo.Opt) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(fleetTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if fs.NumRecords() == 0 {
			return out
		}
		out = append(out, fs.Records()...)
	}
}
