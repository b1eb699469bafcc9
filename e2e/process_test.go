//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// event is one line a client prints on stdout. Every client prints the same
// shape; a field a given event does not carry is its zero value.
type event struct {
	Name string `json:"event"`
	MS   int64  `json:"ms"`
	// assigned, revoked, lost, polled: partitions by topic; assigned may
	// also carry everything the client owns now.
	Partitions map[string][]int32 `json:"partitions"`
	Owned      map[string][]int32 `json:"owned"`
	// commit: offsets by topic and partition, and "" or the failure.
	Offsets map[string]map[string]int64 `json:"offsets"`
	Error   string                      `json:"error"`
	// polled, produced, read, closed.
	Count      int64  `json:"count"`
	Total      int64  `json:"total"`
	Checksum   string `json:"checksum"`
	Failed     int64  `json:"failed"`
	Duplicates int64  `json:"duplicates"`
	// polled: the distinct record values the consumer has read so far.
	Distinct int64 `json:"distinct"`
	// produced, paced (franzclient -every): acknowledgement latencies.
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	ClientID string  `json:"client_id"`
	// closed (Java): KIP-368 re-authentications the client made.
	Reauthentications int64  `json:"reauthentications"`
	MemberID          string `json:"member_id"`
	// txn (Java eos): the group generation sent with the offsets.
	Generation int32 `json:"generation"`
	// record (Java txn-produce, txn-read, share): one record, and the
	// transaction it was written in (txn-produce).
	Txn       int    `json:"txn"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	// record, held (share): how many times the broker delivered it.
	DeliveryCount int16 `json:"delivery_count"`
	// txn: committed or aborted. produced (txn-produce): records aborted.
	// read (txn-read): whether every partition was read to its end.
	// state (streams): the application's state.
	Result   string `json:"result"`
	Aborted  int64  `json:"aborted"`
	Complete bool   `json:"complete"`
	State    string `json:"state"`
	// tasks (streams --group-protocol): the application's active and
	// standby tasks ("0_1"); ClientID is its thread's consumer client id.
	Active  []string `json:"active"`
	Standby []string `json:"standby"`

	line string
}

// At is when the client printed the event.
func (e event) At() time.Time { return time.UnixMilli(e.MS) }

func (e event) String() string { return e.line }

// proc is a client process: its events, and its logs kept under
// e2e/.cache/runs/<test>/<name>.{out,err}.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd

	mu      sync.Mutex
	events  []event
	changed chan struct{} // closed and replaced on each new event and at exit
	exited  bool
	waitErr error
}

// runDir is the directory the current test keeps its logs and journal in,
// emptied at the start of the test (of each run of it, with go test
// -count=N).
func runDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(runsDir, strings.ReplaceAll(t.Name(), "/", "_"))
	if prev, seen := runDirs.Swap(d, t); !seen || prev != t {
		if err := os.RemoveAll(d); err != nil {
			t.Fatalf("empty %s: %v", d, err)
		}
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", d, err)
	}
	return d
}

// runDirs holds, by run directory, the test that emptied it last.
var runDirs sync.Map

// startProc starts argv as the client called name. The process is killed at
// the end of the test if still running.
func startProc(t *testing.T, name string, env []string, argv ...string) *proc {
	t.Helper()
	dir := runDir(t)
	out, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.Create(filepath.Join(dir, name+".err"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = errf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, name: name, cmd: cmd, changed: make(chan struct{})}
	t.Logf("%s: %s", name, strings.Join(argv, " "))
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: start: %v", name, err)
	}
	// Reads stdout until the process closes it, then reaps the process.
	go func() {
		sc := bufio.NewScanner(io.TeeReader(stdout, out))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			var e event
			if err := json.Unmarshal([]byte(line), &e); err != nil || e.Name == "" {
				continue // not an event: kept in the .out file only
			}
			e.line = line
			p.mu.Lock()
			p.events = append(p.events, e)
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		werr := cmd.Wait()
		out.Close()
		errf.Close()
		p.mu.Lock()
		p.exited, p.waitErr = true, werr
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		p.waitExit(10 * time.Second)
	})
	return p
}

// eventsNamed is the client's events named name so far, in order.
func (p *proc) eventsNamed(name string) []event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []event
	for _, e := range p.events {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// last is the client's last event named name, nil if none.
func (p *proc) last(name string) *event {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.events) - 1; i >= 0; i-- {
		if p.events[i].Name == name {
			e := p.events[i]
			return &e
		}
	}
	return nil
}

// mark is the number of events so far: pass it to waitFor to match only
// events that come after this point.
func (p *proc) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

// snapshot returns the events so far.
func (p *proc) snapshot() []event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]event(nil), p.events...)
}

// waitFor returns the first event at index from or later that matches, and
// fails the test if none comes within timeout or the process exits first.
func (p *proc) waitFor(from int, timeout time.Duration, what string, match func(event) bool) event {
	p.t.Helper()
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		for i := from; i < len(p.events); i++ {
			if match(p.events[i]) {
				e := p.events[i]
				p.mu.Unlock()
				return e
			}
		}
		from = len(p.events)
		exited, ch := p.exited, p.changed
		p.mu.Unlock()
		if exited {
			p.t.Fatalf("%s exited (%v) before %s\n%s", p.name, p.waitErr, what, p.tail())
		}
		select {
		case <-ch:
		case <-deadline:
			p.t.Fatalf("%s: no %s within %s\n%s", p.name, what, timeout, p.tail())
		}
	}
}

// tail is the end of the process's stdout events and stderr, for failures.
func (p *proc) tail() string {
	var b bytes.Buffer
	evs := p.snapshot()
	if len(evs) > 15 {
		evs = evs[len(evs)-15:]
	}
	fmt.Fprintf(&b, "--- last events of %s:\n", p.name)
	for _, e := range evs {
		fmt.Fprintln(&b, e.line)
	}
	errLog, _ := os.ReadFile(filepath.Join(runDir(p.t), p.name+".err"))
	if len(errLog) > 3000 {
		errLog = errLog[len(errLog)-3000:]
	}
	fmt.Fprintf(&b, "--- end of %s's stderr:\n%s", p.name, errLog)
	return b.String()
}

func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if !exited && p.cmd.Process != nil {
		p.cmd.Process.Signal(sig)
	}
}

// waitExit waits for the process to exit and reports whether it did.
func (p *proc) waitExit(timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		exited, ch := p.exited, p.changed
		p.mu.Unlock()
		if exited {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return false
		}
	}
}

// stop sends SIGTERM and fails the test unless the process exits cleanly
// within timeout.
func (p *proc) stop(timeout time.Duration) {
	p.t.Helper()
	p.signal(syscall.SIGTERM)
	p.stopped(timeout)
}

// stopAll sends SIGTERM to every process at once, then fails the test
// unless each exits cleanly within timeout: clients that take a while to
// close (a poll in the middle of a long batch) close side by side.
func stopAll(timeout time.Duration, ps ...*proc) {
	for _, p := range ps {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range ps {
		p.t.Helper()
		p.stopped(timeout)
	}
}

// stopped waits for a process sent SIGTERM and fails the test unless it
// exits cleanly within timeout.
func (p *proc) stopped(timeout time.Duration) {
	p.t.Helper()
	if !p.waitExit(timeout) {
		p.t.Fatalf("%s did not exit within %s of SIGTERM\n%s", p.name, timeout, p.tail())
	}
	p.mu.Lock()
	werr := p.waitErr
	p.mu.Unlock()
	// A JVM that ran its shutdown hook still exits 143 (128+SIGTERM): the
	// client's "closed" event is what says it closed cleanly.
	var xerr *exec.ExitError
	if errors.As(werr, &xerr) && xerr.ExitCode() == 143 && p.has("closed") {
		return
	}
	if werr != nil {
		p.t.Fatalf("%s exited with %v after SIGTERM\n%s", p.name, werr, p.tail())
	}
}

// has reports whether the process printed an event of that name.
func (p *proc) has(name string) bool {
	for _, e := range p.snapshot() {
		if e.Name == name {
			return true
		}
	}
	return false
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.t.Helper()
	p.signal(syscall.SIGKILL)
	if !p.waitExit(10 * time.Second) {
		p.t.Fatalf("%s survived SIGKILL", p.name)
	}
}

// waitDone waits for a process that ends by itself and fails the test
// unless it exits 0 within timeout.
func (p *proc) waitDone(timeout time.Duration) {
	p.t.Helper()
	if !p.waitExit(timeout) {
		p.t.Fatalf("%s did not finish within %s\n%s", p.name, timeout, p.tail())
	}
	p.mu.Lock()
	werr := p.waitErr
	p.mu.Unlock()
	if werr != nil {
		p.t.Fatalf("%s failed: %v\n%s", p.name, werr, p.tail())
	}
}
