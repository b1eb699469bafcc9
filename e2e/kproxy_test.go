//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// kproxy is a running `kproxy serve` with a journal.
type kproxy struct {
	t       *testing.T
	proc    *proc
	journal string
	stopped bool
}

// kproxyBin is the binary run.sh builds.
func kproxyBin() string { return filepath.Join(binDir, "kproxy") }

// startKproxy runs `kproxy serve` in front of the broker, with a fresh
// journal when journaled (a scenario that replays the timeline), and waits
// until its bootstrap listener accepts connections. With E2E_MODE=direct it
// returns nil: bootstrap then names the broker.
func startKproxy(t *testing.T, journaled bool) *kproxy {
	t.Helper()
	return startKproxyWith(t, journaled, brokerAddr)
}

// startKproxyWith is startKproxy in front of upstream, with more serve
// flags (TLS, SASL, admin) in extra.
func startKproxyWith(t *testing.T, journaled bool, upstream string, extra ...string) *kproxy {
	t.Helper()
	return startKproxyWrapped(t, nil, journaled, upstream, extra...)
}

// startKproxyWrapped is startKproxyWith run through the command wrap
// (prlimit, to lower its file-descriptor limit), when not empty.
func startKproxyWrapped(t *testing.T, wrap []string, journaled bool, upstream string, extra ...string) *kproxy {
	t.Helper()
	switch mode {
	case "direct":
		t.Log("E2E_MODE=direct: clients go straight to the broker; no timeline is checked")
		return nil
	case "proxy":
		t.Log("E2E_MODE=proxy: kproxy runs without a journal; no timeline is checked")
		journaled = false
	}
	if _, err := os.Stat(kproxyBin()); err != nil {
		t.Fatalf("kproxy binary missing (run e2e/run.sh, which builds it): %v", err)
	}
	argv := []string{kproxyBin(), "serve",
		"--upstream", upstream,
		"--listen", proxyListen,
		"--admin", "",
	}
	// With SNI routing kproxy opens no broker listeners, and refuses a
	// broker port base.
	if !slices.Contains(extra, "--sni-host-pattern") {
		argv = append(argv, "--broker-port-base", proxyPortBase)
	}
	argv = append(argv, extra...)
	journal := ""
	if journaled {
		journal = filepath.Join(runDir(t), "journal")
		// The live report too: replaying the journal must tell the same.
		argv = append(argv, "--journal", journal, "--report", filepath.Join(runDir(t), "live-report.json"))
	}
	p := startProc(t, "kproxy", nil, append(append([]string(nil), wrap...), argv...)...)
	k := &kproxy{t: t, proc: p, journal: journal}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", proxyListen, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if p.waitExit(0) || time.Now().After(deadline) {
			t.Fatalf("kproxy does not listen on %s: %v\n%s", proxyListen, err, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() {
		if !k.stopped {
			p.signal(syscall.SIGTERM)
			p.waitExit(20 * time.Second)
		}
	})
	return k
}

// bootstrap is the one address a scenario's clients are seeded with:
// kproxy's, or the broker's with E2E_MODE=direct.
func bootstrap(k *kproxy) string {
	if k == nil {
		return brokerAddr
	}
	return proxyListen
}

// stop sends SIGTERM and requires a clean exit, so the journal is complete.
// A nil kproxy (E2E_MODE=direct) has nothing to stop.
func (k *kproxy) stop() {
	if k == nil {
		return
	}
	k.t.Helper()
	k.stopped = true
	k.proc.stop(30 * time.Second)
}

// finish stops kproxy and returns the timeline replayed from its journal,
// or nil when this run checks no timeline (E2E_MODE proxy or direct).
func (k *kproxy) finish() *report {
	if k == nil {
		return nil
	}
	k.t.Helper()
	k.stop()
	if k.journal == "" {
		return nil
	}
	return k.replay()
}

// replay runs `kproxy replay JOURNAL --format json`, requires it to equal
// the report the live proxy wrote when it stopped, and decodes it. The raw
// JSON is kept as timeline.json in the test's run directory.
func (k *kproxy) replay() *report {
	k.t.Helper()
	if k.journal == "" {
		k.t.Fatal("replay: this kproxy ran without a journal")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kproxyBin(), "replay", k.journal, "--format", "json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		k.t.Fatalf("kproxy replay %s: %v\n%s", k.journal, err, stderr.String())
	}
	out := filepath.Join(runDir(k.t), "timeline.json")
	if err := os.WriteFile(out, stdout.Bytes(), 0o644); err != nil {
		k.t.Fatal(err)
	}
	live, err := os.ReadFile(filepath.Join(runDir(k.t), "live-report.json"))
	if err != nil {
		k.t.Fatalf("kproxy serve --report wrote no report: %v", err)
	}
	if !bytes.Equal(live, stdout.Bytes()) {
		k.t.Errorf("kproxy replay's JSON (%s) differs from the live report (%s)", out, filepath.Join(runDir(k.t), "live-report.json"))
	}
	var r report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		k.t.Fatalf("kproxy replay: output is not the documented JSON (%v); kept in %s", err, out)
	}
	r.path = out
	return &r
}
