//go:build e2e

package e2e

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// matrixCause is a cause of the accuracy matrix: what the members of its
// groups do, the kinds it must produce, and the families that play it (one
// group each).
type matrixCause struct {
	name string
	// kinds must each be found in every group of the cause; those in
	// ofCulprit must name the culprit's client id.
	kinds     []string
	ofCulprit map[string]bool
	families  []string
}

// matrixCauses are the rows' causes. A family runs a cause when its client
// can play it and the kind's rule covers its protocol: the Java client on
// KIP-848's protocol (java_consumer) plays poll and freeze (a second static
// process is refused with UNRELEASED_INSTANCE_ID, fencing nobody, and the
// broker picks the assignor); kafkajs has no static membership and no
// poll timer of its own (a long eachBatch stops its heartbeats: a session
// timeout), franz-go no poll timer (its rebalance timeout is only enforced
// with BlockRebalanceOnPoll).
var matrixCauses = []matrixCause{
	{
		name:      "poll",
		kinds:     []string{"poll_timeout_eviction", "rebalance_loop"},
		ofCulprit: map[string]bool{"poll_timeout_eviction": true},
		families:  []string{"java_classic", "java_consumer", "kafka_python", "librdkafka"},
	},
	{
		name:      "freeze",
		kinds:     []string{"session_timeout_eviction"},
		ofCulprit: map[string]bool{"session_timeout_eviction": true},
		families:  []string{"java_classic", "java_consumer", "kafka_python", "librdkafka", "kafkajs", "franz_go"},
	},
	{
		name:     "rollout",
		kinds:    []string{"rolling_restart"},
		families: []string{"kafka_python", "librdkafka", "kafkajs", "franz_go"},
	},
	{
		name:      "assignors",
		kinds:     []string{"mixed_assignors"},
		ofCulprit: map[string]bool{"mixed_assignors": true},
		families:  []string{"java_classic", "kafka_python", "librdkafka", "kafkajs", "franz_go"},
	},
	{
		name:      "static",
		kinds:     []string{"static_member_fenced"},
		ofCulprit: map[string]bool{"static_member_fenced": true},
		families:  []string{"java_classic", "kafka_python", "librdkafka", "franz_go"},
	},
}

// matrixMember starts one consumer of family with args (flags every driver
// takes: --bootstrap, --group, --topic, --client-id, --work-ms, ...).
func matrixMember(t *testing.T, family, name string, args ...string) *proc {
	t.Helper()
	switch family {
	case "java_classic":
		return javaClient(t, name, "consume", append([]string{"--mode", "range"}, args...)...)
	case "java_consumer":
		return javaClient(t, name, "consume", append([]string{"--mode", "consumer"}, args...)...)
	case "kafka_python":
		return kafkaPython(t, name, args...)
	case "librdkafka":
		return confluentKafka(t, name, args...)
	case "kafkajs":
		return kafkaJS(t, name, args...)
	case "franz_go":
		return franzGo(t, name, "consume", args...)
	}
	t.Fatalf("unknown client family %q", family)
	return nil
}

// slowPoll is the culprit of the poll cause per family: processing that
// outlasts its max.poll.interval.ms, so that its poll timer expires at every
// batch. librdkafka wants max.poll.interval.ms at least the session
// timeout.
var slowPoll = map[string][]string{
	"java_classic":  {"--work-ms", "8000", "--max-poll-interval-ms", "5000"},
	"java_consumer": {"--work-ms", "8000", "--max-poll-interval-ms", "5000"},
	"kafka_python":  {"--work-ms", "14000", "--max-poll-interval-ms", "10000", "--session-ms", "6000", "--max-poll-records", "1"},
	"librdkafka":    {"--work-ms", "12000", "--max-poll-interval-ms", "8000", "--session-ms", "6000"},
}

// matrixGroup is one group of the matrix run: a cause played by a family.
type matrixGroup struct {
	cause   matrixCause
	family  string
	group   string
	culprit string  // the client id the cause's member findings must name
	members []*proc // running, to be stopped cleanly at the end
	killed  []*proc // fenced, refused or fighting: killed at the end
}

// TestScenario55: the accuracy matrix (issue 26). Each cause of
// matrixCauses is played by several client families at once, one group per
// family, side by side on one topic through one journaled kproxy:
//   - poll: a member whose processing outlasts max.poll.interval.ms, next to
//     a steady one (poll_timeout_eviction of it, rebalance_loop);
//   - freeze: a member stopped with SIGSTOP for 25 s, 2.5 times its 10 s
//     session timeout, next to a steady one (session_timeout_eviction of it);
//   - rollout: three dynamic members restarted one after the other
//     (rolling_restart);
//   - assignors: a member offering an assignor the group's member does
//     not (mixed_assignors of it);
//   - static: a static member, then a second process with its
//     group.instance.id (static_member_fenced of the first).
//
// `kproxy diagnose` of the journal must find each kind of its cause for
// every family that played it; the matrix (kinds × families) is written to
// matrix.md in the run directory and to the test log, with the other
// findings of each group. Scenario 46's healthy runs give the other half of
// the published matrix (false findings per member-minute).
func TestScenario55(t *testing.T) {
	const topic = "matrix_topic"
	freshTopic(t, topic, 4, "")
	// Every generation kept live, so that the live report equals the
	// replayed one (the poll loops run past serve's default 10).
	k := startKproxyWith(t, true, brokerAddr, "--timeline-retain", "0,0")
	bs := bootstrap(k)
	feed(t, bs, topic, 2000)
	run := time.Now().Unix()

	var groups []*matrixGroup
	for _, c := range matrixCauses {
		for _, fam := range c.families {
			familyByName(t, fam)
			groups = append(groups, &matrixGroup{cause: c, family: fam,
				group: fmt.Sprintf("test_group_55_%s_%s_%d", c.name, fam, run)})
		}
	}
	// Client ids of their own per group, as different applications have:
	// the diagnosis ties a member's Fetch connections to it by host and
	// client id, and every client here runs on one host.
	args := func(g *matrixGroup, who string, more ...string) []string {
		return append([]string{"--bootstrap", bs, "--group", g.group, "--topic", topic, "--client-id", g.family + "-" + who}, more...)
	}
	name := func(g *matrixGroup, who string) string { return g.cause.name + "-" + g.family + "-" + who }

	// Every group's members, started at once.
	var all []*proc
	for _, g := range groups {
		switch g.cause.name {
		case "poll":
			g.culprit = g.family + "-slow"
			g.members = []*proc{
				matrixMember(t, g.family, name(g, "steady"), args(g, "steady", "--work-ms", "100")...),
				matrixMember(t, g.family, name(g, "slow"), args(g, "slow", slowPoll[g.family]...)...),
			}
		case "freeze":
			g.culprit = g.family + "-frozen"
			g.members = []*proc{
				matrixMember(t, g.family, name(g, "steady"), args(g, "steady", "--work-ms", "100")...),
				matrixMember(t, g.family, name(g, "frozen"), args(g, "frozen", "--work-ms", "100")...),
			}
		case "rollout":
			for i := 1; i <= 3; i++ {
				id := fmt.Sprintf("roll-%d", i)
				g.members = append(g.members, matrixMember(t, g.family, name(g, id), args(g, id, "--work-ms", "50")...))
			}
		case "assignors":
			// A member whose assignor the group's does not share: the
			// anchor offers range to families whose default is
			// roundrobin, and roundrobin to those of range.
			g.culprit = g.family + "-mixed"
			anchor := "kafka_python"
			if g.family == "java_classic" || g.family == "kafka_python" {
				anchor = "franz_go"
			}
			g.members = []*proc{matrixMember(t, anchor, name(g, "anchor"), args(g, "anchor", "--work-ms", "50")...)}
		case "static":
			g.culprit = g.family + "-static-1"
			g.killed = []*proc{matrixMember(t, g.family, name(g, "first"), args(g, "static-1", "--instance-id", "static-1", "--work-ms", "50")...)}
		}
		all = append(all, g.members...)
		all = append(all, g.killed...)
	}
	for _, p := range all {
		p.waitFor(0, 2*time.Minute, p.name+" assigned", func(e event) bool { return e.Name == "assigned" })
	}
	t.Logf("%d groups, every member assigned", len(groups))

	// The causes, side by side.
	start := time.Now()
	for _, g := range groups {
		switch g.cause.name {
		case "freeze":
			g.members[1].signal(syscall.SIGSTOP)
		case "assignors":
			// Refused at every JoinGroup: never assigned, killed at the end.
			g.killed = append(g.killed, matrixMember(t, g.family, name(g, "mixed"), args(g, "mixed", "--work-ms", "50")...))
		case "static":
			g.killed = append(g.killed, matrixMember(t, g.family, name(g, "second"),
				args(g, "static-1", "--instance-id", "static-1", "--work-ms", "50")...))
		}
	}
	for i := range 3 {
		var rolled []*matrixGroup
		var old []*proc
		for _, g := range groups {
			if g.cause.name == "rollout" {
				rolled = append(rolled, g)
				old = append(old, g.members[i])
			}
		}
		stopAll(60*time.Second, old...)
		for _, g := range rolled {
			id := fmt.Sprintf("roll-%d", i+1)
			g.members[i] = matrixMember(t, g.family, name(g, id+"-again"), args(g, id, "--work-ms", "50")...)
		}
		for _, g := range rolled {
			g.members[i].waitFor(0, 2*time.Minute, g.members[i].name+" assigned", func(e event) bool { return e.Name == "assigned" })
		}
		time.Sleep(2 * time.Second)
	}
	time.Sleep(time.Until(start.Add(25 * time.Second)))
	for _, g := range groups {
		if g.cause.name == "freeze" {
			g.members[1].signal(syscall.SIGCONT)
		}
	}
	// The slow pollers: at least three poll timeouts each (13-26 s a
	// cycle of timeout and rejoin), counted from their first batch.
	for _, g := range groups {
		if g.cause.name == "poll" {
			first := g.members[1].waitFor(0, time.Minute, "the slow member's first batch", func(e event) bool { return e.Name == "polled" })
			time.Sleep(time.Until(first.At().Add(45 * time.Second)))
		}
	}
	time.Sleep(5 * time.Second)
	var running []*proc
	for _, g := range groups {
		running = append(running, g.members...)
	}
	stopAll(60*time.Second, running...)
	for _, g := range groups {
		for _, p := range g.killed {
			p.kill()
		}
	}
	if k.finish() == nil {
		return
	}

	byGroup := map[string][]finding{}
	for _, f := range k.diagnoseAll() {
		byGroup[f.Group] = append(byGroup[f.Group], f)
	}
	cells := map[string]map[string]matrixCell{}
	var kinds []string
	var notes []string
	for _, g := range groups {
		expected := map[string]bool{}
		for _, kind := range g.cause.kinds {
			expected[kind] = true
			if cells[kind] == nil {
				cells[kind] = map[string]matrixCell{}
				kinds = append(kinds, kind)
			}
			who := ""
			if g.cause.ofCulprit[kind] {
				who = g.culprit
			}
			c := matrixCell{expected: true}
			for _, f := range byGroup[g.group] {
				if f.Kind == kind && f.names(who) {
					c.found++
					// Without a reason on the wire, the cause can only
					// have been inferred, and must say so.
					if kind == "poll_timeout_eviction" && !familyByName(t, g.family).reasons && f.Evidence["inferred"] != true {
						t.Errorf("%s/%s: poll_timeout_eviction of a client that sends no reason not marked inferred: %v", g.cause.name, g.family, f.Evidence)
					}
				}
			}
			cells[kind][g.family] = c
			if c.found == 0 {
				t.Errorf("%s/%s: no %s naming %q; findings: %s", g.cause.name, g.family, kind, who, kindsOf(byGroup[g.group]))
			}
		}
		var others []string
		for _, f := range byGroup[g.group] {
			if !expected[f.Kind] {
				others = append(others, f.Severity+" "+f.Kind)
			}
		}
		if len(others) > 0 {
			notes = append(notes, fmt.Sprintf("- %s/%s also: %s", g.cause.name, g.family, strings.Join(counted(others), ", ")))
		}
	}
	table := kindsTable(kinds, cells)
	if len(notes) > 0 {
		table += "\nOther findings of the causing groups:\n\n" + strings.Join(notes, "\n") + "\n"
	}
	writeRun(t, "matrix.md", []byte(table))
	t.Logf("accuracy matrix (✓ n: found n times, ✗: expected and missing, ·: not run):\n%s", table)
}

// kindsOf lists findings as "severity kind (client ids)", for a failure.
func kindsOf(fs []finding) string {
	var out []string
	for _, f := range fs {
		var ids []string
		for _, m := range f.Members {
			ids = append(ids, m.ClientID)
		}
		out = append(out, fmt.Sprintf("%s %s (%s)", f.Severity, f.Kind, strings.Join(ids, " ")))
	}
	return strings.Join(out, "; ")
}

// counted turns a list with repeats into "item ×n" entries, sorted.
func counted(items []string) []string {
	n := map[string]int{}
	for _, it := range items {
		n[it]++
	}
	var out []string
	for it, c := range n {
		if c > 1 {
			it = fmt.Sprintf("%s ×%d", it, c)
		}
		out = append(out, it)
	}
	sort.Strings(out)
	return out
}
