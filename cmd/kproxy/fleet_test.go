//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/demo"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestFleetTwoInstances runs the seed scenario with consumer A behind one
// kproxy and consumer B behind another, both publishing to the events
// topic on kfake, and a third kproxy showing the fleet's story live
// (--fleet-topic). The story told from the topic (replay --from-topic, and
// the third kproxy's report) must be what one kproxy in front of both
// tells: the two instances' journals merged, which is what one proxy
// would have observed (docs/journal-format.md). With one instance's clock
// 1.5 s ahead, the merge corrects it from the coordinator's simultaneous
// answers: the same story, each time within the noise. Each instance
// alone tells only part of it.
func TestFleetTwoInstances(t *testing.T) {
	for _, tc := range []struct {
		name string
		skew time.Duration // of instance zone-b's clock
	}{
		{"same clocks", 0},
		{"zone-b 1.5s ahead", 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
			dir := t.TempDir()
			instance := func(id string) config.Config {
				cfg := testConfig(t, c.ListenAddrs()...)
				cfg.Admin = ""
				cfg.Journal = filepath.Join(dir, id)
				cfg.EventsTopic = fleetTopic
				cfg.EventsPartitions = 3
				cfg.InstanceID = id
				return cfg
			}
			s1, stop1 := startServer(t, instance("zone-a"), serveHooks{})
			s2, stop2 := startServer(t, instance("zone-b"), serveHooks{skew: tc.skew})
			waitFor(t, "the events topic", func() bool { return s1.events.Stats().TopicReady && s2.events.Stats().TopicReady })
			viewCfg := testConfig(t, c.ListenAddrs()...)
			viewCfg.FleetTopic = fleetTopic
			viewCfg.Report = filepath.Join(dir, "fleet-report.json")
			s3, stop3 := startServer(t, viewCfg, serveHooks{})

			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err := demo.Run(ctx, s1.proxy.Addr().String(), demo.Options{
				SeedB: s2.proxy.Addr().String(),
				WorkA: 200 * time.Millisecond, WorkB: 400 * time.Millisecond,
				BJoinsAfter: 1500 * time.Millisecond, BothFor: 2 * time.Second,
			})
			if err != nil {
				t.Fatalf("scenario: %v", err)
			}
			// The live view shows both members while it runs.
			base := "http://" + s3.admin.Addr().String()
			waitFor(t, "the fleet view to show generation 2 with both members", func() bool {
				var r timeline.Report
				if err := json.Unmarshal([]byte(httpGet(t, base+"/api/timeline")), &r); err != nil {
					t.Fatalf("/api/timeline: %v", err)
				}
				g := findGroup(r, demo.Group)
				return g != nil && len(g.Generations) >= 2 && len(g.Generations[1].Members) == 2
			})
			if m := parseMetrics(t, httpGet(t, base+"/metrics")); m["kproxy_fleet_instances"] != 2 || m["kproxy_fleet_records_total"] <= 0 {
				t.Errorf("fleet view metrics: %v instances, %v records; want 2 instances and records",
					m["kproxy_fleet_instances"], m["kproxy_fleet_records_total"])
			}
			if err := stop1(); err != nil {
				t.Fatalf("zone-a: %v", err)
			}
			if err := stop2(); err != nil {
				t.Fatalf("zone-b: %v", err)
			}
			for _, s := range []*server{s1, s2} {
				if st := s.events.Stats(); st.Dropped != 0 || st.Published == 0 {
					t.Errorf("publisher stats %+v; want records published and none dropped", st)
				}
			}
			// Give the view time to read the last records, then stop it.
			time.Sleep(time.Second)
			if err := stop3(); err != nil {
				t.Fatalf("fleet view: %v", err)
			}

			oneProxy := replayJSON(t, filepath.Join(dir, "zone-a"), filepath.Join(dir, "zone-b"))
			fromTopic, stderr := replayTopicJSON(t, c.ListenAddrs()[0])
			live, err := os.ReadFile(viewCfg.Report)
			if err != nil {
				t.Fatal(err)
			}
			// The instance ids the merge adds to a client address that two
			// instances saw (the same port on both proxies, rare) are not
			// in what one proxy tells.
			fromTopic, live = withoutInstances(fromTopic), withoutInstances(live)
			t.Logf("replay --from-topic stderr:\n%s", stderr)
			checkFleetStory(t, oneProxy)
			if tc.skew == 0 {
				if !bytes.Equal(fromTopic, oneProxy) {
					t.Errorf("replay --from-topic differs from the journals merged:\n%s", firstDiff(fromTopic, oneProxy))
				}
				if strings.Contains(stderr, "clock") {
					t.Errorf("replay --from-topic corrected a clock of instances on one host:\n%s", stderr)
				}
			} else {
				if got, want := timeless(t, fromTopic), timeless(t, oneProxy); got != want {
					t.Errorf("replay --from-topic with a skewed instance tells another story than the journals merged:\n%s",
						firstDiff([]byte(got), []byte(want)))
				}
				if !strings.Contains(stderr, "instance zone-b's clock is 1.") {
					t.Errorf("replay --from-topic stderr does not report zone-b's clock corrected by about 1.5 s:\n%s", stderr)
				}
			}
			if !bytes.Equal(live, fromTopic) {
				t.Errorf("the --fleet-topic view's report differs from replay --from-topic:\n%s", firstDiff(live, fromTopic))
			}
			if tc.skew == 0 {
				// A window: from generation 2's start on, the same entries.
				since := *reportGroup(t, oneProxy).Generations[1].StartedAt
				jOut, jErr, err := runKproxySplit(t, "replay", filepath.Join(dir, "zone-a"), filepath.Join(dir, "zone-b"),
					"--since", since, "--format", "jsonl")
				if err != nil {
					t.Fatalf("replay --since: %v\n%s", err, jErr)
				}
				tOut, tErr, err := runKproxySplit(t, "replay", "--from-topic", fleetTopic, "--brokers", c.ListenAddrs()[0],
					"--since", since, "--format", "jsonl")
				if err != nil {
					t.Fatalf("replay --from-topic --since: %v\n%s", err, tErr)
				}
				if tOut != jOut || !strings.Contains(tOut, "generation") {
					t.Errorf("replay --from-topic --since %s differs from the journals':\n%s", since, firstDiff([]byte(tOut), []byte(jOut)))
				}
			}
			checkPartial(t, oneProxy, replayJSON(t, filepath.Join(dir, "zone-a")), "consumer-B", true)
			checkPartial(t, oneProxy, replayJSON(t, filepath.Join(dir, "zone-b")), "consumer-A", false)
		})
	}
}

// replayTopicJSON is `kproxy replay --from-topic --format json` against the
// broker at addr, and its stderr.
func replayTopicJSON(t *testing.T, addr string) ([]byte, string) {
	t.Helper()
	stdout, stderr, err := runKproxySplit(t, "replay", "--from-topic", fleetTopic, "--brokers", addr, "--format", "json")
	if err != nil {
		t.Fatalf("replay --from-topic: %v\n%s", err, stderr)
	}
	return []byte(stdout), stderr
}

// checkFleetStory checks the whole story: generation 2 has A and B, both
// observed, the split A [0 1] / B [2], and A's commit during revocation.
func checkFleetStory(t *testing.T, report []byte) {
	t.Helper()
	g := reportGroup(t, report)
	if len(g.Generations) < 2 {
		t.Fatalf("%d generations; want at least 2", len(g.Generations))
	}
	gen := g.Generations[1]
	got := map[string][]int32{}
	for _, m := range gen.Members {
		if !m.Observed {
			t.Errorf("gen 2 member %s (%s) not observed; want every member observed", m.MemberID, m.ClientID)
		}
		got[m.ClientID] = m.Assignment[demo.Topic]
	}
	if a, b := got["consumer-A"], got["consumer-B"]; len(a) != 2 || len(b) != 1 || b[0] != 2 {
		t.Errorf("gen 2 split %v; want consumer-A [0 1], consumer-B [2]", got)
	}
	if len(gen.CommitsDuringRevocation) == 0 {
		t.Errorf("gen 2 has no commit during revocation; want A's")
	}
}

// checkPartial checks one instance's own story of generation 2: the other
// consumer's member (its id taken from the whole story) is not observed.
// The instance of the leader knows it from the member list and the plan,
// as a member it did not see; the follower's instance does not know it
// at all, and knows its member list is incomplete.
func checkPartial(t *testing.T, whole, partial []byte, other string, leaderSide bool) {
	t.Helper()
	var id string
	for _, m := range reportGroup(t, whole).Generations[1].Members {
		if m.ClientID == other {
			id = m.MemberID
		}
	}
	g := reportGroup(t, partial)
	i := slices.IndexFunc(g.Generations, func(gen timeline.GenerationReport) bool { return gen.Generation == 2 })
	if i < 0 {
		t.Fatalf("no generation 2 in %v", g.Generations)
	}
	gen := g.Generations[i]
	j := slices.IndexFunc(gen.Members, func(m timeline.MemberReport) bool { return m.MemberID == id })
	switch {
	case leaderSide && j < 0:
		t.Errorf("the leader's instance does not list %s's member %s in generation 2", other, id)
	case leaderSide && (gen.Members[j].Observed || gen.Members[j].Status != "unobserved"):
		t.Errorf("%s's member: observed %v, status %q; want not observed, unobserved", other, gen.Members[j].Observed, gen.Members[j].Status)
	case !leaderSide && j >= 0:
		t.Errorf("the follower's instance lists %s's member %s, which it never saw", other, id)
	case !leaderSide && gen.MemberListComplete:
		t.Errorf("the follower's instance says its member list of generation 2 is complete")
	}
}

func reportGroup(t *testing.T, report []byte) *timeline.GroupReport {
	t.Helper()
	var r timeline.Report
	if err := json.Unmarshal(report, &r); err != nil {
		t.Fatalf("report: %v", err)
	}
	g := findGroup(r, demo.Group)
	if g == nil {
		t.Fatalf("report lacks %s", demo.Group)
	}
	return g
}

// withoutInstances removes the instance ids the merge adds to client
// addresses.
func withoutInstances(report []byte) []byte {
	return viaRE.ReplaceAll(report, nil)
}

var (
	viaRE   = regexp.MustCompile(` via zone-[ab]`)
	stampRE = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+Z"`)
	msRE    = regexp.MustCompile(`(Ms"?: ?)-?[0-9.]+`)
	// A line naming a duration in words ("after 517 ms").
	textDurRE = regexp.MustCompile(`[0-9.]+ (µs|ms|s)\b`)
)

// timeless is a JSON report with every time and duration replaced by a
// placeholder: the story without its clock.
func timeless(t *testing.T, report []byte) string {
	t.Helper()
	s := stampRE.ReplaceAllString(string(report), `"T"`)
	s = msRE.ReplaceAllString(s, "${1}0")
	return textDurRE.ReplaceAllString(s, "D")
}

// firstDiff shows where a and b start to differ.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d and %d lines", len(la), len(lb))
}

// TestEventsClusterDown: with the events cluster unreachable, clients are
// served as ever and the story is whole, while /metrics counts the
// exchanges not published.
func TestEventsClusterDown(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
	cfg := testConfig(t, c.ListenAddrs()...)
	cfg.EventsTopic = fleetTopic
	cfg.EventsBrokers = []string{"127.0.0.1:1"} // nothing listens there
	cfg.Report = filepath.Join(t.TempDir(), "report.json")
	s, stop := startServer(t, cfg, serveHooks{eventsBuffer: 10})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := demo.Run(ctx, s.proxy.Addr().String(), demo.Options{
		WorkA: 200 * time.Millisecond, WorkB: 400 * time.Millisecond,
		BJoinsAfter: 1500 * time.Millisecond, BothFor: 2 * time.Second,
	})
	if err != nil {
		t.Fatalf("scenario through kproxy with its events cluster down: %v", err)
	}
	m := parseMetrics(t, httpGet(t, "http://"+s.admin.Addr().String()+"/metrics"))
	if m["kproxy_events_dropped_total"] <= 0 || m["kproxy_events_published_total"] != 0 || m["kproxy_events_topic_ready"] != 0 {
		t.Errorf("events metrics: dropped %v, published %v, topic ready %v; want drops, nothing published, not ready",
			m["kproxy_events_dropped_total"], m["kproxy_events_published_total"], m["kproxy_events_topic_ready"])
	}
	if err := stop(); err != nil {
		t.Fatalf("run() = %v; want nil", err)
	}
	report, err := os.ReadFile(cfg.Report)
	if err != nil {
		t.Fatal(err)
	}
	checkFleetStory(t, report)
}

// TestFleetFlagErrors: bad combinations of the fleet flags are refused
// with a message naming the flag.
func TestFleetFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the error
	}{
		{[]string{"replay", "--from-topic", "ev"}, "--brokers: required with --from-topic"},
		{[]string{"replay", seedSample, "--brokers", "127.0.0.1:9092"}, "--brokers: only with --from-topic"},
		{[]string{"replay", seedSample, "--from-topic", "ev", "--brokers", "127.0.0.1:9092"}, "--from-topic reads a topic, not journals"},
		{[]string{"replay", "--from-topic", "e v", "--brokers", "127.0.0.1:9092"}, `--from-topic "e v": ' ' is not allowed`},
		{[]string{"replay", "--from-topic", "ev", "--brokers", "kafka"}, `--brokers "kafka": want HOST:PORT`},
		{[]string{"replay", "--from-topic", "ev", "--brokers", "127.0.0.1:9092", "--max-skew", "0s"}, "--max-skew 0s: out of range"},
		{[]string{"replay"}, "want at least one journal PATH, or --from-topic NAME --brokers HOST:PORT"},
		{[]string{"replay", seedSample, "--config", "kproxy.yaml"}, "--config: only with --from-topic"},
		{[]string{"serve", "--upstream", "127.0.0.1:9092", "--instance-id", "zone-a"}, "instance-id \"zone-a\": only with events-topic"},
		{[]string{"serve", "--upstream", "127.0.0.1:9092", "--events-brokers", "e:9092"}, "events-brokers \"[e:9092]\": only with events-topic or fleet-topic"},
		{[]string{"serve", "--upstream", "127.0.0.1:9092", "--events-topic", "ev", "--events-partitions", "0"}, "events-partitions \"0\": out of range"},
		{[]string{"serve", "--upstream", "127.0.0.1:9092", "--fleet-topic", "ev", "--max-skew", "-1s"}, "max-skew \"-1s\": out of range"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := runKproxySplit(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

// TestFleetDocs keeps docs/fleet.md naming every fleet metric and flag.
func TestFleetDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var names []string
	for _, m := range eventsMetrics {
		names = append(names, "`"+m.name+"`")
	}
	for _, m := range fleetMetrics {
		names = append(names, "`"+m.name+"`")
	}
	for _, k := range []string{config.KeyEventsTopic, config.KeyEventsBrokers, config.KeyEventsPartitions,
		config.KeyEventsRetention, config.KeyInstanceID, config.KeyFleetTopic, config.KeyMaxSkew,
		"from-topic", "brokers", "config"} {
		names = append(names, "`--"+k)
	}
	for _, n := range names {
		if !strings.Contains(doc, n) {
			t.Errorf("docs/fleet.md does not name %s", n)
		}
	}
}

// TestFleetViewFirst: a --fleet-topic view started before any instance
// creates the topic, and shows the story of an instance started after it.
func TestFleetViewFirst(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
	viewCfg := testConfig(t, c.ListenAddrs()...)
	viewCfg.FleetTopic = fleetTopic
	view, _ := startServer(t, viewCfg, serveHooks{})
	cfg := testConfig(t, c.ListenAddrs()...)
	cfg.Admin = ""
	cfg.EventsTopic = fleetTopic
	s, _ := startServer(t, cfg, serveHooks{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.proxy.Addr().String()), kgo.ConsumeTopics(demo.Topic), kgo.ConsumerGroup("late-group"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	cl.PollFetches(ctx) // joins the group
	cancel()
	base := "http://" + view.admin.Addr().String()
	waitFor(t, "the view to show the instance's group", func() bool {
		var r timeline.Report
		if err := json.Unmarshal([]byte(httpGet(t, base+"/api/timeline")), &r); err != nil {
			t.Fatalf("/api/timeline: %v", err)
		}
		return findGroup(r, "late-group") != nil
	})
}
