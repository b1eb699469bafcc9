//go:build e2e

package e2e

import (
	"fmt"
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
	checkWorkloadProxy(t, k)
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
