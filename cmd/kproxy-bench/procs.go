package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// The three-process harness: the broker (`kproxy-bench broker`, kfake),
// kproxy (the `kproxy serve` binary, built once) and each phase's franz-go
// client (`kproxy-bench client`) run as separate processes, as users run
// them. Each phase of a round (produce, fetch, latency) runs direct and
// through each kproxy in turn, in the reverse order every other round, so
// that the figures compared are taken seconds apart on the same machine.

// procOptions are the three-process harness's own settings.
type procOptions struct {
	kproxy  string   // kproxy binary; "" builds ./cmd/kproxy
	compare []string // NAME=PATH: more kproxy binaries, alternated too
	// forwarders are NAME=COMMAND: plain TCP forwarders alternated too
	// (forwarderCommand says what COMMAND may name).
	forwarders []string
	// ports, when not 0, is the first of the loopback ports the run
	// listens on.
	ports    int
	keepLogs bool
	// readers, when not 0, adds a way per kproxy ("NAME+api"): its
	// rounds again while this many clients read its admin API, after
	// fillGroups groups of five generations went through it.
	readers, fillGroups int
}

// variant is one kproxy process, or one plain TCP forwarder, under test.
type variant struct {
	name string
	bin  string
	// forwarder, when not empty, is the sh -c command of a plain TCP
	// forwarder (-forwarder), run instead of bin: it has no admin server
	// (no bytes counted, no RSS), and its clients dial it for every
	// broker.
	forwarder string
	cmd       *exec.Cmd
	seed      string // its bootstrap listener
	admin     string // its admin server, for /metrics and /readyz
	log       string // its stderr
}

// procResult accumulates one way of reaching the broker over all rounds.
type procResult struct {
	result
	// kproxy's CPU time (utime+stime) over the produce and fetch phases,
	// and the bytes it forwarded in them (both directions).
	kproxyCPU   time.Duration
	kproxyBytes float64
	// The same CPU time by phase, beside the bytes of records produced
	// or fetched in them: a produce phase and a fetch phase cost kproxy
	// differently, and a figure per GiB of records is what a user of
	// kproxy pays for the records they move.
	produceCPU, fetchCPU        time.Duration
	producedBytes, fetchedBytes float64
	// kproxy's CPU time over the latency phases (the client's connections
	// and its untimed first call included): divided by the requests
	// timed, its cost per acks=all produce exchange.
	latencyCPU time.Duration
	// kproxy's context switches over the latency phases: each is one of
	// its threads going to sleep, and being woken again.
	latencySwitches int64
	// kproxy's CPU seconds in each produce and fetch phase, in the order
	// they ran: phases of the same index in two variants ran seconds
	// apart, and their ratios are steadier than the totals'.
	phaseCPU []float64
	// kproxy's context switches (voluntary and not, all its threads) over
	// the same phases: each is a thread that blocked or was preempted,
	// what kproxy's wake-ups cost besides the syscalls themselves.
	kproxySwitches int64
	// The client's and the broker's CPU time over the same phases.
	clientCPU, brokerCPU time.Duration
	payload              float64 // bytes produced and fetched
	rssKiB, hwmKiB       int64
	// Admin API requests answered (and their bytes, and those that
	// failed) while the phases ran, for a way with readers.
	apiRequests, apiBytes, apiFailures int64
}

// runProcesses runs the three-process harness and writes its report to w.
func runProcesses(ctx context.Context, w io.Writer, opts options, po procOptions) error {
	dir, err := os.MkdirTemp("", "kproxy-bench-")
	if err != nil {
		return err
	}
	defer func() {
		if po.keepLogs {
			fmt.Fprintln(os.Stderr, "kproxy-bench: logs kept in", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	bin := po.kproxy
	if bin == "" {
		bin = filepath.Join(dir, "kproxy")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kproxy-dev/kproxy/cmd/kproxy")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build kproxy: %w", err)
		}
	}
	variants := []*variant{{name: "kproxy", bin: bin}}
	for _, c := range po.compare {
		name, path, ok := strings.Cut(c, "=")
		if !ok {
			return fmt.Errorf("-compare %q: want NAME=PATH", c)
		}
		variants = append(variants, &variant{name: name, bin: path})
	}
	for _, f := range po.forwarders {
		name, command, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("-forwarder %q: want NAME=COMMAND", f)
		}
		if opts.tls {
			return errors.New("-forwarder: plaintext only")
		}
		variants = append(variants, &variant{name: name, forwarder: command})
	}
	ports := &portRange{next: po.ports}

	var brokerArgs, kproxyTLS []string
	var clientTLS []string
	if opts.tls {
		t := exitOnFatal{}
		ca := testpki.NewCA(t, "kproxy-bench CA")
		b := ca.Issue(t, testpki.Spec{CN: "kfake", IPs: []string{"127.0.0.1"}})
		k := ca.Issue(t, testpki.Spec{CN: "kproxy", IPs: []string{"127.0.0.1"}})
		caFile := testpki.WriteFile(t, dir, "ca.pem", ca.PEM)
		brokerArgs = []string{"-tls-cert", testpki.WriteFile(t, dir, "kfake.crt", b.CertPEM),
			"-tls-key", testpki.WriteFile(t, dir, "kfake.key", b.KeyPEM)}
		kproxyTLS = []string{"--tls-cert", testpki.WriteFile(t, dir, "kproxy.crt", k.CertPEM),
			"--tls-key", testpki.WriteFile(t, dir, "kproxy.key", k.KeyPEM),
			"--upstream-tls", "--upstream-ca", caFile}
		clientTLS = []string{"-tls-ca", caFile}
	}

	if po.ports != 0 {
		p, err := ports.take(1)
		if err != nil {
			return err
		}
		brokerArgs = append(brokerArgs, "-port", strconv.Itoa(p[0]))
	}
	broker := exec.CommandContext(ctx, self, append([]string{"broker"}, brokerArgs...)...)
	broker.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	broker.Stderr = os.Stderr
	brokerIn, err := broker.StdinPipe()
	if err != nil {
		return err
	}
	brokerOut, err := broker.StdoutPipe()
	if err != nil {
		return err
	}
	if err := broker.Start(); err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	defer func() { brokerIn.Close(); broker.Wait() }() //nolint:errcheck // ends with stdin
	line, err := bufio.NewReader(brokerOut).ReadString('\n')
	if err != nil {
		return fmt.Errorf("broker address: %w", err)
	}
	brokerAddr := strings.TrimSpace(line)

	for _, v := range variants {
		if err := v.start(ctx, dir, self, brokerAddr, kproxyTLS, ports); err != nil {
			return err
		}
		defer v.stop()
	}

	results := map[string]*procResult{"direct": {}}
	for _, v := range variants {
		results[v.name] = &procResult{}
	}
	ways := []way{{name: "direct", seed: brokerAddr}}
	for _, v := range variants {
		ways = append(ways, way{name: v.name, seed: v.seed, v: v})
		if po.readers > 0 && v.forwarder == "" {
			if _, _, err := runPhase(ctx, self, append([]string{"client", "-seed", v.seed, "-phase", "groups",
				"-topic", "bench-fill-" + v.name, "-groups", strconv.Itoa(po.fillGroups)}, clientTLS...)); err != nil {
				return fmt.Errorf("%s: fill its timeline: %w", v.name, err)
			}
			name := v.name + "+api"
			results[name] = &procResult{}
			ways = append(ways, way{name: name, seed: v.seed, v: v, readers: po.readers})
		}
	}
	loadStart := loadAverage()
	h := &harness{ctx: ctx, self: self, opts: opts, clientTLS: clientTLS, broker: broker.Process.Pid, results: results}
	for round := 0; round < opts.rounds; round++ {
		order := append([]way(nil), ways...)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		// Each phase runs every way in turn, so that the figures paired
		// are taken seconds apart.
		for _, phase := range []string{"produce", "fetch", "latency", "delete"} {
			for _, w := range order {
				if err := h.phase(w, phase, round); err != nil {
					return fmt.Errorf("%s round %d %s: %w", w.name, round, phase, err)
				}
			}
		}
	}
	var names []string
	for _, w := range ways {
		names = append(names, w.name)
	}
	reportProcesses(w, opts, names, results)
	fmt.Fprintf(w, "\nload average (1, 5, 15 min) at the first round: %s; after the last: %s\n", loadStart, loadAverage())
	return nil
}

// way is one way of reaching the broker: direct, or through a kproxy.
type way struct {
	name, seed string
	v          *variant // nil for direct
	readers    int      // clients reading v's admin API during each phase
}

// harness runs the client phases of the rounds and keeps their figures.
type harness struct {
	ctx       context.Context
	self      string // this binary, for `kproxy-bench client`
	opts      options
	clientTLS []string
	broker    int // the broker's pid
	results   map[string]*procResult
}

// phase runs one client phase of a round through w: produce and fetch are
// timed and their CPU counted (the client's, the broker's and kproxy's),
// latency keeps each round trip, delete drops the round's topics (kfake
// keeps every record in memory).
func (h *harness) phase(w way, phase string, round int) error {
	r := h.results[w.name]
	args := append([]string{"client", "-seed", w.seed, "-phase", phase,
		"-topic", fmt.Sprintf("bench-%s-%d", w.name, round),
		"-records", strconv.Itoa(h.opts.records), "-size", strconv.Itoa(h.opts.size),
		"-latency-requests", strconv.Itoa(h.opts.latencyN)}, h.clientTLS...)
	if w.v != nil && w.v.forwarder != "" {
		args = append(args, "-dial", w.v.seed)
	}
	if h.opts.noCompression {
		args = append(args, "-no-compression")
	}
	var f0 float64
	var k0 time.Duration
	var s0 int64
	if w.v != nil {
		// kproxy's bytes forwarded in a produce or fetch phase come from
		// its /metrics, read before and after the phase, never while its
		// CPU is being counted (a scrape costs kproxy CPU).
		if w.v.forwarder == "" {
			var err error
			if f0, err = w.v.forwarded(); err != nil {
				return err
			}
		}
		k0, s0 = procCPU(w.v.cmd.Process.Pid), procSwitches(w.v.cmd.Process.Pid)
	}
	b0 := procCPU(h.broker)
	var rd *readers
	if w.readers > 0 {
		rd = startReaders(w.v.admin, w.readers)
	}
	res, ccpu, err := runPhase(h.ctx, h.self, args)
	if rd != nil {
		rd.stop()
		r.apiRequests += rd.requests.Load()
		r.apiBytes += rd.bytes.Load()
		r.apiFailures += rd.failures.Load()
	}
	if err != nil {
		return err
	}
	bytes := float64(h.opts.records * h.opts.size)
	switch phase {
	case "produce", "fetch":
		if w.v != nil {
			d := procCPU(w.v.cmd.Process.Pid) - k0
			r.kproxyCPU += d
			if phase == "produce" {
				r.produceCPU += d
				r.producedBytes += bytes
			} else {
				r.fetchCPU += d
				r.fetchedBytes += bytes
			}
			r.phaseCPU = append(r.phaseCPU, d.Seconds())
			r.kproxySwitches += procSwitches(w.v.cmd.Process.Pid) - s0
			if w.v.forwarder == "" { // a forwarder counts no bytes
				f1, err := w.v.forwarded()
				if err != nil {
					return err
				}
				r.kproxyBytes += f1 - f0
			}
		}
		r.brokerCPU += procCPU(h.broker) - b0
		r.clientCPU += ccpu
		r.payload += bytes
		if phase == "produce" {
			r.produceMBps = append(r.produceMBps, bytes/res.Seconds/1e6)
		} else {
			r.fetchMBps = append(r.fetchMBps, bytes/res.Seconds/1e6)
		}
	case "latency":
		if w.v != nil {
			r.latencyCPU += procCPU(w.v.cmd.Process.Pid) - k0
			r.latencySwitches += procSwitches(w.v.cmd.Process.Pid) - s0
		}
		for _, ns := range res.LatenciesNs {
			r.latencies = append(r.latencies, time.Duration(ns))
		}
	case "delete":
		if w.v != nil {
			r.rssKiB, r.hwmKiB = procRSS(w.v.cmd.Process.Pid)
		}
	}
	return nil
}

// start runs `kproxy serve` (or the forwarder) in front of the broker and
// waits until it is ready.
func (v *variant) start(ctx context.Context, dir, self, broker string, tlsArgs []string, pr *portRange) error {
	if v.forwarder != "" {
		return v.startForwarder(ctx, dir, self, broker, pr)
	}
	ports, err := pr.take(3)
	if err != nil {
		return err
	}
	v.seed = fmt.Sprintf("127.0.0.1:%d", ports[0])
	v.admin = fmt.Sprintf("127.0.0.1:%d", ports[2])
	// The defaults users run with, but for the ports: kfake's node is 0,
	// reached at the broker port base.
	args := append([]string{"serve", "--upstream", broker, "--listen", v.seed,
		"--broker-port-base", strconv.Itoa(ports[1]), "--admin", v.admin}, tlsArgs...)
	return v.run(exec.CommandContext(ctx, v.bin, args...), dir, "ready", func() bool {
		resp, err := http.Get("http://" + v.admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// run starts cmd as v, its output in v's log in dir, and waits up to 30 s
// until ready says it is (what names that state in the error).
func (v *variant) run(cmd *exec.Cmd, dir, what string, ready func() bool) error {
	v.log = filepath.Join(dir, v.name+".log")
	logf, err := os.Create(v.log)
	if err != nil {
		return err
	}
	defer logf.Close()
	v.cmd = cmd
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	v.cmd.Stdout, v.cmd.Stderr = logf, logf
	if err := v.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", v.name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			v.stop()
			return fmt.Errorf("%s not %s after 30s (log %s)", v.name, what, v.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// startForwarder runs the forwarder's command in front of the broker and
// waits until it accepts connections.
func (v *variant) startForwarder(ctx context.Context, dir, self, broker string, pr *portRange) error {
	ports, err := pr.take(1)
	if err != nil {
		return err
	}
	v.seed = fmt.Sprintf("127.0.0.1:%d", ports[0])
	// The command execs the forwarder, so that the process whose CPU is
	// counted is the forwarder's, not a shell's.
	cmd := exec.CommandContext(ctx, "sh", "-c", forwarderCommand(v.forwarder, self, dir, v.seed, broker))
	return v.run(cmd, dir, "listening", func() bool {
		c, err := net.Dial("tcp", v.seed)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// stop ends the kproxy process, as users do (SIGTERM).
func (v *variant) stop() {
	if v.cmd == nil || v.cmd.Process == nil {
		return
	}
	v.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // may have exited
	v.cmd.Wait()                          //nolint:errcheck // a signal ends it
}

// forwarded reads from kproxy's /metrics the bytes it has forwarded, both
// directions.
func (v *variant) forwarded() (float64, error) {
	resp, err := http.Get("http://" + v.admin + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("%s metrics: %w", v.name, err)
	}
	defer resp.Body.Close()
	var total float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && (name == "kproxy_bytes_from_clients_total" || name == "kproxy_bytes_from_brokers_total") {
			f, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return 0, fmt.Errorf("%s metrics: %s: %w", v.name, name, err)
			}
			total += f
		}
	}
	return total, sc.Err()
}

// runPhase runs one client phase and returns its result and the client
// process's CPU time.
func runPhase(ctx context.Context, self string, args []string) (phaseResult, time.Duration, error) {
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return phaseResult{}, 0, fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	var res phaseResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, 0, fmt.Errorf("client output %q: %w", out.String(), err)
	}
	return res, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// procCPU is a process's CPU time so far, all its threads' (those that
// ended too), in nanoseconds: the process's CPU-time clock
// (clock_gettime of the clock id clock_getcpuclockid(3) gives). Falls back
// to utime plus stime from /proc/<pid>/stat, counted in ticks of 10 ms,
// which is coarse beside kproxy's few tens of milliseconds per phase; 0
// when neither can be read.
func procCPU(pid int) time.Duration {
	var ts syscall.Timespec
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) in the kernel's terms.
	clock := uintptr((^pid)<<3 | 2)
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clock, uintptr(unsafe.Pointer(&ts)), 0); e == 0 {
		return time.Duration(ts.Nano())
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	d, _ := statCPU(b)
	return d
}

// statCPU reads utime plus stime from the contents of a /proc/<pid>/stat.
func statCPU(b []byte) (time.Duration, error) {
	// The command name, in parentheses, may hold spaces and parentheses:
	// count fields after the last closing parenthesis. utime and stime
	// are fields 14 and 15 of the line, 12 and 13 after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(f))
	}
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat: utime: %w", err)
	}
	s, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat: stime: %w", err)
	}
	return time.Duration(u+s) * time.Second / clockTicks, nil
}

// loadAverage is the host's load averages from /proc/loadavg, for the
// report: other work on the machine moves every figure.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// procSwitches is the context switches of a process's threads so far,
// voluntary and not, from /proc/<pid>/task/*/status (a thread that ended
// takes its count with it; Go's rarely end).
func procSwitches(pid int) int64 {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err == nil {
			n += statusSwitches(b)
		}
	}
	return n
}

// statusSwitches reads voluntary_ctxt_switches plus
// nonvoluntary_ctxt_switches from the contents of a /proc status file.
func statusSwitches(b []byte) int64 {
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
			m, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			n += m
		}
	}
	return n
}

// procRSS is a process's resident set now and at its peak, in KiB, from
// /proc/<pid>/status; zeros when it cannot be read.
func procRSS(pid int) (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	return statusRSS(b)
}

// statusRSS reads VmRSS and VmHWM, in KiB, from the contents of a
// /proc/<pid>/status.
func statusRSS(b []byte) (rss, hwm int64) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm
}

// portRange hands out the loopback ports a run listens on: from next up,
// or any free ones when next is 0.
type portRange struct{ next int }

// take returns n loopback ports free now.
func (pr *portRange) take(n int) ([]int, error) {
	if pr.next == 0 {
		return freePorts(n)
	}
	var ports []int
	for ; len(ports) < n; pr.next++ {
		if pr.next > 65535 {
			return nil, errors.New("free port: none left above -ports")
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", pr.next))
		if err != nil {
			continue // taken
		}
		ln.Close()
		ports = append(ports, pr.next)
	}
	return ports, nil
}

// freePorts returns n loopback ports free now, chosen by the kernel.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(errors.New("free port"), err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
