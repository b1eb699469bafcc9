//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestScenario15 is the story from a packet capture (docs/capture.md):
// scenario 1 runs twice, once through kproxy with a journal, once with
// the clients talking to the broker directly while tcpdump captures them
// as docs/capture.md says to (-i any: Linux cooked captures, on the
// loopback here). kproxy replay --pcap of the capture tells the proxied story:
// the same generations, members, A [0 1] / B [2] split, trigger, the group
// waiting for A, A's commit during revocation, and the same diagnosis;
// kproxy capture, reading the same capture, writes the same report as
// replay --pcap and a journal that diagnose reads.
func TestScenario15(t *testing.T) {
	const topic, group = "round_topic", "test_group_1"
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Fatal("tcpdump is not installed (.ci/run installs it)")
	}
	// Through kproxy.
	freshTopic(t, topic, 3, group)
	k := startKproxy(t, true)
	if k == nil {
		return // E2E_MODE: no timeline checked
	}
	feed(t, proxyListen, topic, 600)
	a, b, _ := runSplit(t, topic, group, proxyListen, proxyListen)
	b.stop(60 * time.Second)
	a.stop(60 * time.Second)
	proxied := k.finish()
	proxiedFindings := k.diagnose(group)

	// Directly, captured.
	freshTopic(t, topic, 3, group)
	port := brokerAddr[strings.LastIndex(brokerAddr, ":")+1:]
	pcap := filepath.Join(runDir(t), "direct.pcap")
	dump := startProc(t, "tcpdump", nil, "tcpdump", "-i", "any", "-U", "-s", "0", "-w", pcap, "tcp port "+port)
	waitListening(t, dump)
	feed(t, brokerAddr, topic, 600)
	a, b, commit := runSplit(t, topic, group, brokerAddr, brokerAddr)
	b.stop(60 * time.Second)
	a.stop(60 * time.Second)
	time.Sleep(time.Second) // the last segments reach the capture
	dump.signal(syscall.SIGINT)
	if !dump.waitExit(20 * time.Second) {
		t.Fatalf("tcpdump did not stop\n%s", dump.tail())
	}

	raw, stderr := runKproxyCmd(t, "replay", "--pcap", pcap, "--broker-ports", port, "--format", "json")
	os.WriteFile(filepath.Join(runDir(t), "capture-timeline.json"), raw, 0o644) //nolint:errcheck // kept for a look
	t.Logf("kproxy replay --pcap said on stderr:\n%s", stderr)
	// A capture tcpdump dropped nothing of has no gap.
	if errLog, _ := os.ReadFile(filepath.Join(runDir(t), "tcpdump.err")); bytes.Contains(errLog, []byte("\n0 packets dropped by kernel")) &&
		strings.Contains(stderr, "the capture misses") {
		t.Errorf("replay --pcap reports gaps in a capture tcpdump dropped nothing of")
	}
	var captured report
	if err := json.Unmarshal(raw, &captured); err != nil {
		t.Fatalf("replay --pcap: output is not the documented JSON: %v", err)
	}
	captured.path = filepath.Join(runDir(t), "capture-timeline.json")

	if got, want := story(t, &captured, group), story(t, proxied, group); !slices.Equal(got, want) {
		t.Errorf("replay --pcap's story of the direct run:\n%s\nkproxy's of the proxied run:\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	g := captured.group(t, group)
	first, i := g.mustFind(t, 0, "consumer-A")
	if got := all(first.member("consumer-A").Assignment); !slices.Equal(got, parts(topic, 0, 1, 2)) {
		t.Errorf("gen %d: A's assignment %v; want %v", first.Generation, got, parts(topic, 0, 1, 2))
	}
	second, _ := g.mustFind(t, i+1, "consumer-A", "consumer-B")
	checkSplit(t, second, topic, commit)

	// kproxy capture reading the same capture: the same report, and a
	// journal whose diagnosis is the proxied journal's.
	journal, live := filepath.Join(runDir(t), "capture-journal"), filepath.Join(runDir(t), "capture-report.json")
	runKproxyCmd(t, "capture", "--pcap", pcap, "--broker-ports", port, "--admin", "", "--journal", journal, "--report", live)
	if got, err := os.ReadFile(live); err != nil || !bytes.Equal(got, raw) {
		t.Errorf("kproxy capture's report (%s) differs from replay --pcap's (%v)", live, err)
	}
	capturedFindings := (&kproxy{t: t, journal: journal}).diagnose(group)
	if got, want := kinds(capturedFindings), kinds(proxiedFindings); !slices.Equal(got, want) {
		t.Errorf("diagnosis of the capture: %v; of the proxied journal: %v", got, want)
	}
}

// waitListening waits until tcpdump says it captures.
func waitListening(t *testing.T, dump *proc) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		errLog, _ := os.ReadFile(filepath.Join(runDir(t), "tcpdump.err"))
		if bytes.Contains(errLog, []byte("listening on")) {
			return
		}
		if dump.waitExit(0) || time.Now().After(deadline) {
			t.Fatalf("tcpdump does not capture\n%s", dump.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runKproxyCmd runs kproxy with args and returns its stdout and stderr,
// failing the test when it fails.
func runKproxyCmd(t *testing.T, args ...string) ([]byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kproxyBin(), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kproxy %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), stderr.String()
}

// story is what two runs of one scenario must tell alike of group: per
// generation its members by client id with what they owned, were given
// and lost, its trigger, whom the group waited for, its protocol, and the
// commits during revocation by client id and result. Member ids, times
// and addresses differ from run to run.
func story(t *testing.T, r *report, group string) []string {
	t.Helper()
	g := r.group(t, group)
	client := map[string]string{}
	for _, gen := range g.Generations {
		for _, m := range gen.Members {
			client[m.MemberID] = m.ClientID
		}
	}
	var lines []string
	for _, gen := range g.Generations {
		line := fmt.Sprintf("gen %s/%s %s trigger %s by %s, waited for %s:", gen.ProtocolType, gen.Protocol, gen.Mode,
			gen.Trigger.Kind, client[gen.Trigger.Member], client[gen.WaitedFor])
		ms := slices.Clone(gen.Members)
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.ClientID, b.ClientID) })
		for _, m := range ms {
			line += fmt.Sprintf(" %s owns %v +%v -%v", m.ClientID, all(m.Assignment), all(m.Added), all(m.Revoked))
		}
		for _, c := range gen.CommitsDuringRevocation {
			line += fmt.Sprintf("; commit during revocation by %s: %s", client[c.MemberID], c.Result)
		}
		lines = append(lines, line)
	}
	return lines
}

// kinds lists the findings' kinds, sorted.
func kinds(fs []finding) []string {
	var ks []string
	for _, f := range fs {
		ks = append(ks, f.Kind)
	}
	slices.Sort(ks)
	return ks
}
