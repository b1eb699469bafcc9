package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/capture"
	"github.com/kproxy-dev/kproxy/config"

	"github.com/kproxy-dev/kproxy/capture/pcapsynth"
)

// writeSeedCapture writes the capture of the seed journal's traffic to a
// file of dir in format f, as tcpdump on the broker's host would have
// captured it without kproxy in the path.
func writeSeedCapture(t *testing.T, dir string, f pcapsynth.Format) string {
	t.Helper()
	xs, err := pcapsynth.ReadJournal(seedSample)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "seed.pcap")
	if f == pcapsynth.PcapNG {
		path += "ng"
	}
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	w, err := pcapsynth.NewWriter(file, f)
	if err != nil {
		t.Fatal(err)
	}
	w.MSS, w.Acks = 1448, true
	if err := pcapsynth.WriteExchanges(w, xs, pcapsynth.ExchangeOptions{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplayPcap checks that replay --pcap of the seed scenario's capture
// prints what replay of its journal prints, in every format: the golden
// files of TestReplaySeedSample.
func TestReplayPcap(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []pcapsynth.Format{pcapsynth.Pcap, pcapsynth.PcapNG} {
		capture := writeSeedCapture(t, dir, f)
		for _, format := range []string{"text", "json", "jsonl", "html"} {
			t.Run(filepath.Base(capture)+" "+format, func(t *testing.T) {
				got := filepath.Join(dir, "got."+format)
				if out, err := runKproxy(t, "replay", "--pcap", capture, "--format", format, "-o", got); err != nil || out != "" {
					t.Fatalf("replay --pcap: %v\n%s", err, out)
				}
				golden := filepath.Join("testdata", "seed-rebalance."+format)
				if format == "html" {
					golden = filepath.Join(dir, "journal.html")
					if out, err := runKproxy(t, "replay", seedSample, "--format", "html", "-o", golden); err != nil {
						t.Fatalf("replay: %v\n%s", err, out)
					}
				}
				a, err := os.ReadFile(got)
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("replay --pcap --format %s differs from the journal's replay (%s):\n%s", format, golden, a)
				}
			})
		}
	}
}

// TestReplayPcapErrors checks the errors and warnings of replay --pcap.
func TestReplayPcapErrors(t *testing.T) {
	dir := t.TempDir()
	capture := writeSeedCapture(t, dir, pcapsynth.Pcap)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--pcap", seedSample + "/missing.pcap"}, "no such file"},
		{[]string{"replay", "--pcap", filepath.Join("testdata", "seed-rebalance.text")}, "not a pcap or pcapng capture"},
		{[]string{"replay", "--pcap", "--broker-ports", "70000", capture}, "--broker-ports 70000: want a TCP port"},
		{[]string{"replay", "--broker-ports", "9093", seedSample}, "--broker-ports: only with --pcap"},
		{[]string{"replay", "--pcap", "--from-topic", "t", "--brokers", "127.0.0.1:1"}, "--pcap reads captures, --from-topic a topic"},
	} {
		out, err := runKproxy(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
	// No broker on the ports given: said, not silent.
	out, err := runKproxy(t, "replay", "--pcap", "--broker-ports", "9093", capture)
	if err != nil || !strings.Contains(out, "no Kafka connection in") || !strings.Contains(out, "broker ports 9093 (set --broker-ports)") {
		t.Errorf("replay of a capture without its brokers' port: %v\n%s", err, out)
	}
}

// TestCaptureLive feeds kproxy capture the seed scenario's capture through
// a pipe, as tcpdump -w - would: the web page's API shows the group while
// the stream is open, /metrics counts the capture, and when the stream
// ends the report is the journal's replay report and the journal it wrote
// replays to the journal's story.
func TestCaptureLive(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(writeSeedCapture(t, dir, pcapsynth.PcapNG))
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	o := captureOptions{pcap: "-", cfg: config.Default()}
	o.cfg.Admin = "127.0.0.1:0"
	o.cfg.Journal = filepath.Join(dir, "journal")
	o.cfg.Report = filepath.Join(dir, "report.json")
	admin := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runCapture(context.Background(), o, capture.Config{}, pr, zap.NewNop(), func(a string) { admin <- a })
	}()
	// Most of the capture: the group's story up to B's joining is in it.
	half := len(data) * 3 / 4
	go func() { pw.Write(data[:half]) }() //nolint:errcheck // the reader reads it all
	addr := <-admin
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(httpGet(t, "http://"+addr+"/api/groups"), "test_group_1") {
		if time.Now().After(deadline) {
			t.Fatalf("the live page never showed the group: %s", httpGet(t, "http://"+addr+"/api/groups"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m := httpGet(t, "http://"+addr+"/metrics"); !strings.Contains(m, "kproxy_capture_packets_total") ||
		strings.Contains(m, "kproxy_connections_open") {
		t.Errorf("/metrics: want the capture's counts and not the proxy's:\n%s", m)
	}
	if _, err := pw.Write(data[half:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(o.cfg.Report)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "seed-rebalance.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("kproxy capture's report differs from the journal's replay (testdata/seed-rebalance.json):\n%s", got)
	}
	var out, errOut bytes.Buffer
	if err := replay(context.Background(), []string{o.cfg.Journal}, replayOptions{format: "text"}, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	if want, _ := os.ReadFile(filepath.Join("testdata", "seed-rebalance.text")); !bytes.Equal(out.Bytes(), want) {
		t.Errorf("replay of the journal kproxy capture wrote:\n%s\nwant testdata/seed-rebalance.text", out.String())
	}
}

// TestCaptureStops checks that kproxy capture stops when told, although
// its capture stream stays open and silent.
func TestCaptureStops(t *testing.T) {
	data, err := os.ReadFile(writeSeedCapture(t, t.TempDir(), pcapsynth.Pcap))
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	written := make(chan struct{})
	go func() {
		pw.Write(data[:len(data)/2]) //nolint:errcheck // a part, then silence
		close(written)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o := captureOptions{pcap: "-", cfg: config.Default()}
	o.cfg.Admin = ""
	go func() { done <- runCapture(ctx, o, capture.Config{}, pr, zap.NewNop(), nil) }()
	// The pipe's write returns once the capture has read the part.
	select {
	case <-written:
	case err := <-done:
		t.Fatalf("kproxy capture returned before it was told to stop: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("kproxy capture did not stop")
	}
}

// TestReplayPcapStdin checks replay --pcap - reading standard input.
func TestReplayPcapStdin(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Open(writeSeedCapture(t, dir, pcapsynth.Pcap))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdin := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = stdin }()
	got := filepath.Join(dir, "got.text")
	if out, err := runKproxy(t, "replay", "--pcap", "-", "-o", got); err != nil || out != "" {
		t.Fatalf("replay --pcap -: %v\n%s", err, out)
	}
	a, _ := os.ReadFile(got)
	if b, _ := os.ReadFile(filepath.Join("testdata", "seed-rebalance.text")); !bytes.Equal(a, b) {
		t.Errorf("replay --pcap - printed:\n%s\nwant testdata/seed-rebalance.text", a)
	}
}
