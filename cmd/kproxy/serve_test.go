package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/config"
)

func TestServeConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad listen and no upstream", []string{"serve", "--listen", "abc"},
			"config: listen \"abc\": missing port (from --listen)\nconfig: upstream: required: at least one seed broker HOST:PORT"},
		{"bad log format", []string{"serve", "--upstream", "127.0.0.1:1", "--log-format", "text"},
			`config: log-format "text": want console or json (from --log-format)`},
		{"unknown flag", []string{"serve", "--lisen", "x"}, "unknown flag: --lisen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runKproxy(t, tt.args...)
			if err == nil || err.Error() != tt.want {
				t.Errorf("kproxy %v error = %v; want %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestServeAdminPortBusy(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := testConfig(t, "127.0.0.1:1")
	cfg.Admin = busy.Addr().String()
	_, err = newServer(cfg, zap.NewNop())
	if err == nil || !strings.HasPrefix(err.Error(), "admin: listen "+cfg.Admin+": ") {
		t.Fatalf("newServer() error = %v; want admin: listen %s: ...", err, cfg.Admin)
	}
	// The proxy's listener was never opened, or was closed: the port is free.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Fatalf("listen port still in use after the failure: %v", err)
	}
	ln.Close()
}

// testConfig is a valid configuration on free loopback ports.
func testConfig(t *testing.T, upstreams ...string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Listen = freeAddr(t)
	cfg.Upstreams = upstreams
	// Port 0 for the broker listener: Listen's port + 1 may be taken.
	cfg.BrokerListeners = map[int32]string{0: "127.0.0.1:0"}
	cfg.Admin = "127.0.0.1:0"
	cfg.ShutdownTimeout = 5 * time.Second
	return cfg
}

// anyPortBrokerConfig writes a config file that puts kfake's node 0 on a
// port the kernel picks, for tests that run serve from the command line:
// the default, the listen port + 1, may be taken by another test.
func anyPortBrokerConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kproxy.yaml")
	if err := os.WriteFile(path, []byte("broker-listeners:\n  0: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// freeAddr is a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestServeProxiesAndExposesMetrics(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	s, err := newServer(testConfig(t, c.ListenAddrs()...), zap.NewNop())
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

	cl, err := kgo.NewClient(kgo.SeedBrokers(s.proxy.Addr().String()), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("through kproxy")}).FirstErr(); err != nil {
		t.Fatalf("produce through kproxy: %v", err)
	}
	cl.Close()

	base := "http://" + s.admin.Addr().String()
	if got := httpGet(t, base+"/healthz"); got != "ok\n" {
		t.Errorf("/healthz = %q; want %q", got, "ok\n")
	}
	m := parseMetrics(t, httpGet(t, base+"/metrics"))
	for _, name := range []string{"kproxy_connections_total", "kproxy_request_frames_total", "kproxy_response_frames_total",
		"kproxy_bytes_from_clients_total", "kproxy_bytes_from_brokers_total"} {
		if m[name] < 1 {
			t.Errorf("%s = %v; want at least 1 after a produce", name, m[name])
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("run() = %v; want nil after a clean drain", err)
	}
	done <- nil // for the deferred receive
	if nc, err := net.Dial("tcp", s.proxy.Addr().String()); err == nil {
		nc.Close()
		t.Errorf("proxy still accepts connections after run returned")
	}
}

// TestServeSIGTERM runs `kproxy serve` as main does, with a journal and a
// report, and stops it with a real SIGTERM: it must return nil (exit 0)
// after writing the report and closing the journal.
func TestServeSIGTERM(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1))
	admin := freeAddr(t)
	dir := t.TempDir()
	journalDir, report := filepath.Join(dir, "journal"), filepath.Join(dir, "report.json")
	cfgFile := anyPortBrokerConfig(t)
	done := make(chan error, 1)
	go func() {
		_, err := runKproxy(t, "serve", "--upstream", c.ListenAddrs()[0], "--listen", freeAddr(t),
			"--admin", admin, "--log-level", "error", "--config", cfgFile,
			"--journal", journalDir, "--journal-fsync", "always", "--report", report)
		done <- err
	}()
	// The signal handler is installed before the admin server answers.
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned before serving: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin server never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after SIGTERM = %v; want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report after SIGTERM: %v", err)
	}
	var r struct{ Groups []any }
	if err := json.Unmarshal(b, &r); err != nil || len(r.Groups) != 0 {
		t.Errorf("report = %q (%v); want JSON with no groups", b, err)
	}
	checkMode(t, journalDir, 0o700|os.ModeDir)
	if segs, _ := os.ReadDir(journalDir); len(segs) != 1 {
		t.Errorf("journal holds %d files; want the one segment opened at start", len(segs))
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}

// parseMetrics reads Prometheus text: every sample line "name value", and
// checks each has HELP and TYPE lines before it.
func parseMetrics(t *testing.T, text string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	described := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			f := strings.Fields(rest)
			if len(f) < 3 || (f[0] != "HELP" && f[0] != "TYPE") {
				t.Errorf("bad comment line %q", line)
				continue
			}
			described[f[1]]++
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		v, err := strconv.ParseFloat(val, 64)
		if !ok || err != nil {
			t.Errorf("bad sample line %q", line)
			continue
		}
		if described[name] != 2 {
			t.Errorf("sample %s without HELP and TYPE", name)
		}
		m[name] = v
	}
	return m
}
