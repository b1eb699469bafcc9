//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Scenario 31's sizes. 20,000 records make two transactions of the
// producer of TestTxnEtl (it commits every 10,000) and runs of 50-110 s on
// this machine, both side by side.
const (
	kgoSuiteRecords = 20000
	// kgoSuiteTimeout is each run's -test.timeout: a test that hangs fails
	// the scenario, named, in bounded time.
	kgoSuiteTimeout = 4 * time.Minute
	kgoSuiteGrace   = 30 * time.Second
)

// TestScenario31 runs franz-go's own integration tests (TestGroupETL,
// TestTxnEtl, TestShareGroupETL) twice at once, against the same broker:
// once seeded with the broker and once with every client seeded at kproxy.
// Each test creates its topics, groups and transactional ids with random
// names, so the two runs share nothing but the broker. Every test and
// subtest that passes directly must pass through kproxy; one that fails or
// hangs directly fails the scenario too, named, since kproxy cannot be
// judged on it. None is excluded: on Kafka 4.4.0 every subtest passes
// directly, TestGroupETL/sticky/848/static included (it failed directly on
// 4.1.1). When the broker supports share groups, TestShareGroupETL must
// run directly, not skip. No client of the proxied run may connect to the
// broker itself; afterwards kproxy's counters must show no rewrite failure,
// correlation mismatch or broken frame, and its journal must replay to the
// report it wrote live (checkWorkloadProxy, as the workload scenarios).
func TestScenario31(t *testing.T) {
	share := brokerSupportsShareGroups(t)
	t.Logf("the broker supports share groups (ShareFetch v2, ShareAcknowledge v2): %v", share)

	k := startKproxyWith(t, true, brokerAddr, "--admin", proxyAdmin)
	direct := startKgoSuite(t, "direct", brokerAddr, kgoSuiteRecords, kgoSuiteTimeout)
	runs := []*kgoRun{direct}
	var proxied *kgoRun
	var bypass *bypassWatch
	if k != nil {
		bypass = watchBypass(t)
		proxied = startKgoSuite(t, "proxied", bootstrap(k), kgoSuiteRecords, kgoSuiteTimeout)
		bypass.add(proxied.proc)
		runs = append(runs, proxied)
	}
	for _, r := range runs {
		r.wait(t, kgoSuiteTimeout, kgoSuiteGrace)
		t.Logf("%s run: %s, exit %v", r.name, r.took.Round(100*time.Millisecond), r.exit)
		if r.timedOut {
			t.Logf("%s run: timed out after %s (killed %v seconds later: %v), still running: %s",
				r.name, kgoSuiteTimeout, kgoSuiteGrace.Seconds(), r.killed, strings.Join(r.running, ", "))
		}
	}

	// The table of every test, both runs.
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "%-45s %-18s %s\n", "test", "direct", "through kproxy")
	for _, name := range sortedTests(runs...) {
		fmt.Fprintf(&tbl, "%-45s %-18s", name, cell(direct.tests[name]))
		if proxied != nil {
			fmt.Fprintf(&tbl, " %s", cell(proxied.tests[name]))
		}
		tbl.WriteString("\n")
	}
	t.Logf("franz-go's integration tests, %d records:\n%s", kgoSuiteRecords, tbl.String())

	// The direct run must have tested something, and passed.
	for _, top := range []string{"TestGroupETL", "TestTxnEtl"} {
		subs := 0
		for name := range direct.tests {
			if strings.HasPrefix(name, top+"/") {
				subs++
			}
		}
		if subs == 0 {
			t.Errorf("direct run: %s ran no subtest", top)
		}
	}
	if share {
		if d := direct.tests["TestShareGroupETL"]; d.outcome() != "pass" && d.outcome() != "fail" {
			t.Errorf("direct run: TestShareGroupETL %s although the broker supports share groups", d.outcome())
		}
	}
	for _, name := range sortedTests(direct) {
		d := direct.tests[name]
		switch d.outcome() {
		case "pass", "skip":
			continue
		case "unfinished":
			t.Errorf("direct run: %s did not finish within %s (timed out: %v): it hangs without kproxy; kproxy cannot be judged on it%s", name, kgoSuiteTimeout, direct.timedOut, indent(d.logLines(5)))
		default:
			t.Errorf("direct run: %s fails without kproxy; kproxy cannot be judged on it%s", name, indent(d.logLines(10)))
		}
	}
	if proxied == nil {
		return
	}

	// Through kproxy: every test that passes directly passes.
	for _, name := range sortedTests(direct) {
		if direct.tests[name].outcome() != "pass" {
			continue
		}
		p := proxied.tests[name]
		switch p.outcome() {
		case "pass":
		case "unfinished":
			t.Errorf("%s passes directly (%.1f s) but never finished through kproxy (still running at the run's end: -test.timeout %s, timed out: %v)%s",
				name, direct.tests[name].elapsed, kgoSuiteTimeout, proxied.timedOut, indent(p.logLines(5)))
		case "absent":
			if proxied.timedOut {
				t.Errorf("%s passes directly (%.1f s) but never started through kproxy: the run timed out first (franz-go runs four ETL subtests at a time)", name, direct.tests[name].elapsed)
			} else {
				t.Errorf("%s passes directly (%.1f s) but did not run through kproxy", name, direct.tests[name].elapsed)
			}
		case "skip":
			t.Errorf("%s passes directly (%.1f s) but skips itself through kproxy%s", name, direct.tests[name].elapsed, indent(p.logLines(3)))
		default:
			t.Errorf("%s passes directly (%.1f s) but fails through kproxy (%.1f s)%s", name, direct.tests[name].elapsed, p.elapsed, indent(p.logLines(10)))
		}
	}
	for _, name := range sortedTests(proxied) {
		if direct.tests[name] == nil {
			t.Logf("%s ran only through kproxy: %s", name, proxied.tests[name].outcome())
		}
	}

	// No client of the proxied run went around kproxy; kproxy's own
	// counters show nothing it could not rewrite, no response out of
	// order, no broken frame; its journal replays to its live report.
	bypass.check(t)
	if m := scrape(t, proxyAdmin); m["kproxy_request_frames_total"] == 0 {
		t.Errorf("kproxy forwarded no request: the proxied run did not go through it")
	}
	if r := checkWorkloadProxy(t, k); r != nil {
		checkKgoAssignments(t, r, proxied)
	}
}

// kgoAssigned is the line a franz-go KIP-848 consumer logs (at info) each
// time it takes an assignment from a ConsumerGroupHeartbeat answer: its
// own view of what it was assigned.
var kgoAssigned = regexp.MustCompile(`consumer group (?:initial heartbeat received assignment|heartbeat detected an updated assignment[^;]*); group: (\S+), member_id: (\S+), generation: -?\d+, now_assigned: map\[(.*)\]$`)

// kgoPartitions parses franz-go's now_assigned map: "t1:[0 1] t2:[3]".
var kgoPartitions = regexp.MustCompile(`(\S+?):\[([0-9 ]*)\]`)

// checkKgoAssignments checks the KIP-848 story against each franz-go
// consumer's own view of its assignments in the proxied run: every
// assignment a member logged is one of its epochs in the timeline (by
// member id, topic names and partitions), no member of a group epoch is
// "unobserved" (every member's heartbeats went through kproxy), and no
// member's epoch and assignment is told twice in a row.
func checkKgoAssignments(t *testing.T, r *report, run *kgoRun) {
	t.Helper()
	members := map[string]*consumerMember{}
	for gi := range r.Groups {
		g := &r.Groups[gi]
		for i := range g.ConsumerMembers {
			members[g.Group+"/"+g.ConsumerMembers[i].MemberID] = &g.ConsumerMembers[i]
		}
		for _, gen := range g.Generations {
			for _, m := range gen.Members {
				if gen.Mode == "consumer" && m.Status == "unobserved" {
					t.Errorf("group %s epoch %d: %s is unobserved, though every heartbeat went through kproxy", g.Group, gen.Generation, m.MemberID)
				}
			}
		}
	}
	seen, missing := 0, []string{}
	for _, name := range sortedTests(run) {
		for _, l := range run.tests[name].output {
			m := kgoAssigned.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			seen++
			want := map[string][]int32{}
			for _, tp := range kgoPartitions.FindAllStringSubmatch(m[3], -1) {
				ps := []int32{}
				for _, f := range strings.Fields(tp[2]) {
					n, _ := strconv.Atoi(f)
					ps = append(ps, int32(n))
				}
				slices.Sort(ps)
				want[tp[1]] = ps
			}
			cm := members[m[1]+"/"+m[2]]
			found := false
			if cm != nil {
				for _, e := range cm.Epochs {
					if sameAssignment(e.Assignment, want) {
						found = true
						break
					}
				}
			}
			if !found {
				missing = append(missing, fmt.Sprintf("%s: %s of group %s logged %v; its epochs: %s", name, m[2], m[1], want, cm.summaryOrNone()))
			}
		}
	}
	t.Logf("franz-go's KIP-848 consumers logged %d assignments through kproxy; %d are not among their epochs in the timeline", seen, len(missing))
	if seen == 0 {
		t.Errorf("no franz-go KIP-848 consumer logged an assignment: nothing to check the story against")
	}
	for i, s := range missing {
		if i == 10 {
			t.Errorf("... and %d more", len(missing)-10)
			break
		}
		t.Errorf("an assignment a client logged is not in the timeline: %s", s)
	}
	for key, cm := range members {
		for i := 1; i < len(cm.Epochs); i++ {
			a, b := cm.Epochs[i-1], cm.Epochs[i]
			if a.Epoch == b.Epoch && sameAssignment(a.Assignment, b.Assignment) {
				t.Errorf("%s: epoch %d assigned %v told twice (%s, %s)", key, b.Epoch, b.Assignment, a.At.Format("15:04:05.000"), b.At.Format("15:04:05.000"))
			}
		}
	}
}

// sameAssignment compares assignments by topic, ignoring empty topics.
func sameAssignment(a, b map[string][]int32) bool {
	nonEmpty := func(m map[string][]int32) map[string][]int32 {
		out := map[string][]int32{}
		for k, v := range m {
			if len(v) > 0 {
				out[k] = v
			}
		}
		return out
	}
	a, b = nonEmpty(a), nonEmpty(b)
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// cell is a test's outcome and duration for the table.
func cell(k *kgoTest) string {
	switch o := k.outcome(); o {
	case "pass", "fail":
		return fmt.Sprintf("%s %.1fs", o, k.elapsed)
	default:
		return o
	}
}

// indent lays out log lines under a message, one a line.
func indent(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return ":\n    " + strings.Join(lines, "\n    ")
}
