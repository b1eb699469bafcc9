//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go's own integration tests (package github.com/twmb/franz-go/pkg/kgo
// at the version in go.mod), as scenario 31 runs them. install.sh builds the
// test binary from the module cache (`go test -c`) into .cache/bin/kgo.test.
// The binary writes test2json's framed verbose output (-test.v=test2json) to
// stdout, which `go tool test2json` turns into events after the run. In
// that mode the testing package points os.Stderr at stdout, so the clients'
// logs (franz-go's BasicLogger to os.Stderr, at KGO_LOG_LEVEL) are in the
// same stream; only what the runtime writes to fd 2 reaches stderr: the
// panic of -test.timeout, with the tests still running and every stack.

// kgoSuiteRun selects the tests: the group and transactional ETL chains,
// and the share-group chain, which skips itself when the broker it is
// seeded with advertises no ShareFetch v2 and ShareAcknowledge v2.
const kgoSuiteRun = "^(TestGroupETL|TestTxnEtl|TestShareGroupETL)$"

func kgoTestBin() string { return filepath.Join(binDir, "kgo.test") }

// kgoTest is the outcome of one test or subtest of a run.
type kgoTest struct {
	name string
	// action is pass, fail or skip; "" when the test started and never
	// ended (the run timed out or crashed).
	action  string
	elapsed float64 // seconds, as the test reported it
	output  []string
}

// outcome names the test's result for a report.
func (k *kgoTest) outcome() string {
	if k == nil {
		return "absent"
	}
	if k.action == "" {
		return "unfinished"
	}
	return k.action
}

// kgoRun is one run of the suite's binary.
type kgoRun struct {
	name     string
	proc     *proc
	started  time.Time
	exited   chan struct{} // closed when the process has exited, at ended
	ended    time.Time
	took     time.Duration
	timedOut bool     // the binary's -test.timeout fired: something hung
	running  []string // then, the tests it said were still running
	killed   bool     // and it did not exit by itself after that
	exit     error
	tests    map[string]*kgoTest
}

// startKgoSuite runs the suite's binary with every client seeded at seeds,
// KGO_TEST_RECORDS records per chain, and -test.timeout timeout.
func startKgoSuite(t *testing.T, name, seeds string, records int, timeout time.Duration) *kgoRun {
	t.Helper()
	if _, err := os.Stat(kgoTestBin()); err != nil {
		t.Fatalf("franz-go's test binary is missing (e2e/install.sh builds it): %v", err)
	}
	argv := []string{kgoTestBin(),
		"-test.v=test2json",
		"-test.run", kgoSuiteRun,
		"-test.timeout", timeout.String(),
	}
	env := []string{
		"KGO_SEEDS=" + seeds,
		"KGO_TEST_RF=1",
		"KGO_TEST_RECORDS=" + itoa(records),
	}
	t.Logf("%s: %s", name, strings.Join(env, " "))
	r := &kgoRun{name: name, started: time.Now(), exited: make(chan struct{}),
		proc: startProc(t, name, env, argv...)}
	go func() {
		// Returns at the latest when the test ends and kills the process.
		r.proc.waitExit(24 * time.Hour)
		r.ended = time.Now()
		close(r.exited)
	}()
	return r
}

// wait waits for the run to end, at most grace after its -test.timeout
// (the binary then panics on its own, printing the tests still running),
// kills it if it is still there, and reads its results.
func (r *kgoRun) wait(t *testing.T, timeout, grace time.Duration) {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(time.Until(r.started.Add(timeout + grace))):
		r.killed = true
		r.proc.kill()
		<-r.exited
	}
	r.took = r.ended.Sub(r.started)
	r.proc.mu.Lock()
	r.exit = r.proc.waitErr
	r.proc.mu.Unlock()
	errLog, _ := os.ReadFile(filepath.Join(runDir(t), r.name+".err"))
	if _, after, ok := bytes.Cut(errLog, []byte("panic: test timed out after")); ok {
		r.timedOut = true
		_, after, _ = bytes.Cut(after, []byte("running tests:\n"))
		for _, l := range strings.Split(string(after), "\n") {
			if l = strings.TrimSpace(l); l == "" {
				break
			}
			r.running = append(r.running, l)
		}
	}
	r.tests = parseKgoRun(t, filepath.Join(runDir(t), r.name+".out"))
}

// parseKgoRun reads a run's outcomes from its framed output, and each
// test's output lines from go tool test2json's conversion of it (kept next
// to it as NAME.json). The outcomes come from the report lines themselves
// (\x16--- PASS: name (1.23s)): test2json holds back the reports of
// parallel tests until the binary's final line, which a run that timed out
// never writes.
func parseKgoRun(t *testing.T, out string) map[string]*kgoTest {
	t.Helper()
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]*kgoTest{}
	test := func(name string) *kgoTest {
		k := tests[name]
		if k == nil {
			k = &kgoTest{name: name}
			tests[name] = k
		}
		return k
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if m := kgoRunLine.FindStringSubmatch(l); m != nil {
			test(m[1])
		} else if m := kgoReportLine.FindStringSubmatch(l); m != nil {
			k := test(m[2])
			k.action = strings.ToLower(m[1])
			k.elapsed, _ = strconv.ParseFloat(m[3], 64)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var js, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "tool", "test2json", "-p", "github.com/twmb/franz-go/pkg/kgo")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(raw), &js, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go tool test2json < %s: %v\n%s", out, err, stderr.String())
	}
	if err := os.WriteFile(strings.TrimSuffix(out, ".out")+".json", js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&js)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct{ Action, Test, Output string }
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("go tool test2json wrote %q: %v", sc.Text(), err)
		}
		if ev.Test != "" && ev.Action == "output" {
			k := test(ev.Test)
			k.output = append(k.output, strings.TrimRight(ev.Output, "\n"))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tests
}

// The framed lines of -test.v=test2json that start and end a test.
var (
	kgoRunLine    = regexp.MustCompile(`^\x16=== RUN\s+(\S+)$`)
	kgoReportLine = regexp.MustCompile(`^\x16--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)$`)
)

// logLines are a failed test's own log lines (t.Errorf, t.Logf: the lines
// naming a _test.go file), distinct, most frequent first, at most max, each
// with its count: a failure repeated for 20,000 records is one line.
func (k *kgoTest) logLines(max int) []string {
	count := map[string]int{}
	var order []string
	lineRE := regexp.MustCompile(`^\s+\S+_test\.go:\d+: `)
	for _, l := range k.output {
		if !lineRE.MatchString(l) {
			continue
		}
		l = strings.TrimSpace(l)
		if count[l] == 0 {
			order = append(order, l)
		}
		count[l]++
	}
	sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
	var out []string
	for i, l := range order {
		if i == max {
			out = append(out, fmt.Sprintf("... and %d more distinct lines", len(order)-max))
			break
		}
		out = append(out, fmt.Sprintf("%6d× %s", count[l], l))
	}
	return out
}

// brokerSupportsShareGroups reports whether the broker itself (not kproxy)
// advertises what franz-go's share-group tests require: ShareFetch v2 and
// ShareAcknowledge v2 (Kafka 4.2+).
func brokerSupportsShareGroups(t *testing.T) bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokerAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions from the broker: %v", err)
	}
	max := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		max[k.ApiKey] = k.MaxVersion
	}
	sf, sfOK := max[kmsg.ShareFetch.Int16()]
	sa, saOK := max[kmsg.ShareAcknowledge.Int16()]
	return sfOK && saOK && sf >= 2 && sa >= 2
}

// sortedTests are the names of the tests of the runs, parents before their
// subtests.
func sortedTests(runs ...*kgoRun) []string {
	var names []string
	for _, r := range runs {
		for n := range r.tests {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}
