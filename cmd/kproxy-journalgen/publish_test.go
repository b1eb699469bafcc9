package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/fleet"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/internal/testkafka"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestPublishDryGolden pins what `publish -dry` prints (docs/fleet.md's
// sizing quotes it) for small fleets, the wall-clock figures aside: the
// record sizes follow the events topic's format and the synth traffic, so
// a change of either shows here. go test -run TestPublishDryGolden -update
// rewrites the files.
func TestPublishDryGolden(t *testing.T) {
	wall := regexp.MustCompile(`(?m) in [0-9.]+[a-zµ]+ of wall time|^wall: .*\n`)
	for _, tc := range []struct{ name, instances, groups, span string }{
		{"publish-dry-3x20", "3", "20", "2m"},
		{"publish-dry-20x200", "20", "200", "1m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run([]string{"publish", "-dry", "-instances", tc.instances, "-groups", tc.groups, "-members", "16", "-for", tc.span}, &out); err != nil {
				t.Fatalf("publish -dry: %v\n%s", err, out.String())
			}
			got := wall.ReplaceAll(out.Bytes(), nil)
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestPublishDryGolden -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("publish -dry prints\n%s\nwant (%s)\n%s", got, path, want)
			}
		})
	}
}

// TestFleetTraffic: the exchanges come out in the order a proxy observes
// them (by completion time), each client host always through the same
// instance, every instance used; the Fetch requests added decode as the
// diagnosis reads them, without a response, fetchesPerHeartbeat of them
// per Heartbeat (but those of the last heartbeats, still to come).
func TestFleetTraffic(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		instances, fetches   int
		groups, maxMembers   int
		exchanges            int
		wantFetchesInTraffic bool
	}{
		{"one instance, no fetches", 1, 0, 20, 8, 20000, false},
		{"five instances, six fetches", 5, 6, 50, 12, 40000, true},
		{"twenty instances, two fetches", 20, 2, 200, 32, 40000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fleetTraffic{
				tr:                  synth.New(synth.Options{Seed: 7, Groups: tc.groups, MaxMembers: tc.maxMembers}),
				instances:           tc.instances,
				fetchesPerHeartbeat: tc.fetches,
			}
			hostInstance := map[string]int{}
			used := map[int]bool{}
			var last time.Time
			var heartbeats, fetches int
			for range tc.exchanges {
				e := ft.next()
				done := e.x.CompletedAt()
				if done.Before(last) {
					t.Fatalf("exchange %s completed at %s, before the previous one at %s", decode.APIName(e.x.APIKey), done, last)
				}
				last = done
				host, _, err := net.SplitHostPort(e.x.ClientAddr)
				if err != nil {
					t.Fatal(err)
				}
				if i, ok := hostInstance[host]; ok && i != e.instance {
					t.Fatalf("host %s through instance %d and %d", host, i, e.instance)
				}
				hostInstance[host] = e.instance
				used[e.instance] = true
				switch e.x.APIKey {
				case int16(kmsg.Heartbeat):
					heartbeats++
				case int16(kmsg.Fetch):
					fetches++
					if e.x.Response != nil || !e.x.ResponseAt.IsZero() {
						t.Fatalf("a Fetch with a response: kproxy publishes Fetch requests only")
					}
					fr, err := decode.DecodeFetchRequest(e.x)
					if err != nil {
						t.Fatalf("Fetch does not decode: %v", err)
					}
					if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
						t.Fatalf("Fetch of %+v; want one partition of one topic", fr.Topics)
					}
				}
			}
			if len(used) != tc.instances {
				t.Errorf("%d instances used; want %d", len(used), tc.instances)
			}
			if (fetches > 0) != tc.wantFetchesInTraffic {
				t.Fatalf("%d Fetch requests with %d per heartbeat", fetches, tc.fetches)
			}
			// The fetches of a heartbeat come within the 3 s after it: at most
			// those of the heartbeats of the last 3 s are still to come.
			if want := tc.fetches * heartbeats; fetches > want || fetches+len(ft.fetches) != want {
				t.Errorf("%d Fetch requests out and %d to come for %d heartbeats; want %d in all", fetches, len(ft.fetches), heartbeats, want)
			}
		})
	}
}

// TestPublishKfake publishes a few seconds of fleet traffic through
// fleet.Publisher to kfake over TCP, sped up, and reads it back with the
// fleet's reader: every exchange the output counts is in the topic, from
// the instances named, and the output says none was dropped.
func TestPublishKfake(t *testing.T) {
	c := testkafka.Start(t, kfake.NumBrokers(1))
	const topic = "fleet-load"
	var out bytes.Buffer
	err := run([]string{"publish", "-brokers", c.ListenAddrs()[0], "-topic", topic, "-instances", "3",
		"-groups", "20", "-members", "6", "-for", "4s", "-speed", "20", "-warmup", "5s", "-partitions", "4"}, &out)
	if err != nil {
		t.Fatalf("publish: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`published (\d+) exchange and gap records .*; dropped (\d+) exchanges`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no published line in\n%s", out.String())
	}
	published, _ := strconv.Atoi(m[1])
	if m[2] != "0" || published == 0 {
		t.Fatalf("published %s, dropped %s; want some and none dropped\n%s", m[1], m[2], out.String())
	}
	total := regexp.MustCompile(`: (\d+) exchanges, \d+ record bytes`).FindStringSubmatch(out.String())
	if total == nil || total[1] != m[1] {
		t.Fatalf("the sizes count %v exchanges, the publishers %s\n%s", total, m[1], out.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, err := fleet.OpenSource(ctx, fleet.SourceConfig{Topic: topic, Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var read int
	for {
		_, _, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		read++
	}
	st := src.Stats()
	if read != published || st.Instances != 3 || st.Lost != 0 || st.Late != 0 || len(st.Gaps) != 0 {
		t.Errorf("read back %d exchanges of %d instances (lost %d, late %d, gaps %v); want %d of 3, none lost, late or silent",
			read, st.Instances, st.Lost, st.Late, st.Gaps, published)
	}
}
