//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fleetListen is the bootstrap listener and the port base of the fleet
// scenario's instance i: instance 0 is the suite's kproxy (proxyListen,
// proxyPortBase); instance i > 0 listens on proxyPortBase+20i and proxies
// broker node N on proxyPortBase+20i+N, so that three instances never
// share a port and stay in the range the environment chose.
func fleetListen(t *testing.T, i int) (listen, portBase string) {
	t.Helper()
	if i == 0 {
		return proxyListen, proxyPortBase
	}
	host, _, err := net.SplitHostPort(proxyListen)
	if err != nil {
		t.Fatalf("E2E_PROXY_LISTEN %q: %v", proxyListen, err)
	}
	base, err := strconv.Atoi(proxyPortBase)
	if err != nil {
		t.Fatalf("E2E_PROXY_PORT_BASE %q: %v", proxyPortBase, err)
	}
	b := strconv.Itoa(base + 20*i)
	return net.JoinHostPort(host, b), b
}

// startFleetKproxy runs `kproxy serve` as instance i of a fleet (see
// fleetListen), in front of the broker, with its own journal in the run
// directory (journal-NAME), no admin server, and the serve flags in extra; its log is
// NAME.err. It waits until the bootstrap listener accepts connections.
func startFleetKproxy(t *testing.T, i int, name string, extra ...string) *kproxy {
	t.Helper()
	if _, err := os.Stat(kproxyBin()); err != nil {
		t.Fatalf("kproxy binary missing (run e2e/run.sh, which builds it): %v", err)
	}
	listen, base := fleetListen(t, i)
	journal := filepath.Join(runDir(t), "journal-"+name)
	argv := append([]string{kproxyBin(), "serve",
		"--upstream", brokerAddr,
		"--listen", listen,
		"--broker-port-base", base,
		"--journal", journal,
		"--admin", "", // unless extra names one (the last flag wins)
	}, extra...)
	p := startProc(t, name, nil, argv...)
	k := &kproxy{t: t, proc: p, journal: journal}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", listen, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if p.waitExit(0) || time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s: %v\n%s", name, listen, err, p.tail())
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

// deleteTopic deletes topic if it exists and waits until it is gone, so
// that a scenario's events topic starts empty and kproxy creates it.
func deleteTopic(t *testing.T, topic string) {
	t.Helper()
	adm := admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := adm.DeleteTopics(ctx, topic)
	if err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
	if r := res[topic]; r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete topic %s: %v", topic, r.Err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s still there: %v", topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// replayFromTopic runs `kproxy replay --from-topic TOPIC --brokers BROKER
// --format json` plus extra flags, keeps its output as NAME.json in the run
// directory and decodes it; it returns the raw JSON and the warnings
// written to stderr too.
func replayFromTopic(t *testing.T, name, topic string, extra ...string) (*report, []byte, string) {
	t.Helper()
	return replayArgs(t, name, append([]string{"--from-topic", topic, "--brokers", brokerAddr}, extra...)...)
}

// replayArgs runs `kproxy replay ARGS --format json`, keeps its output as
// NAME.json in the run directory and decodes it; it returns the raw JSON
// and stderr too.
func replayArgs(t *testing.T, name string, args ...string) (*report, []byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	argv := append(append([]string{"replay"}, args...), "--format", "json")
	cmd := exec.CommandContext(ctx, kproxyBin(), argv...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kproxy %v: %v\n%s", argv, err, stderr.String())
	}
	out := filepath.Join(runDir(t), name+".json")
	if err := os.WriteFile(out, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("kproxy %v: output is not the documented JSON (%v); kept in %s", argv, err, out)
	}
	r.path = out
	return &r, stdout.Bytes(), stderr.String()
}

// apiTimeline is kproxy's /api/timeline at admin for group, decoded; the
// raw JSON is returned too.
func apiTimeline(admin, group string) (*report, []byte, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + admin + "/api/timeline?group=" + url.QueryEscape(group))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, b, errors.New("status " + resp.Status)
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, b, err
	}
	return &r, b, nil
}

// writeRun keeps b as name in the test's run directory.
func writeRun(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(runDir(t), name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitTopic waits until topic exists with every partition led (the
// events topic, which the first publishing instance creates): serve
// --fleet-topic refuses to start without it.
func waitTopic(t *testing.T, topic string) {
	t.Helper()
	adm := admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) > 0 {
				ready := true
				for _, p := range td.Partitions {
					ready = ready && p.Err == nil && p.Leader >= 0
				}
				if ready {
					return
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s not created within 30 s: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
