//go:build linux

package journal

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/decode"
)

// The tests here re-execute the test binary as a child that writes a
// journal: TestJournalHelperProcess does the child's part when
// helperEnv names a mode, and is skipped otherwise.
const (
	helperEnv    = "KPROXY_JOURNAL_HELPER"
	helperDirEnv = "KPROXY_JOURNAL_HELPER_DIR"
)

// crashExchange is the child's i-th exchange (i from 1): sizes from 1 KiB
// to about 256 KiB, so a kill often lands inside a write.
func crashExchange(i int) *decode.Exchange {
	x := testExchange(i)
	x.ConnID = uint64(i)
	x.Request = make([]byte, 1024+(i*7919)%(256<<10))
	x.Request[1] = 11
	for j := 2; j < len(x.Request); j++ {
		x.Request[j] = byte(i*7 + j*13)
	}
	return x
}

func TestJournalHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		t.Skip("runs only as the child of a crash or write-error test")
	case "crash":
		helperCrash(t, os.Getenv(helperDirEnv))
	case "fsize":
		helperFileTooLarge(t, os.Getenv(helperDirEnv))
	case "torn":
		helperTorn(t, os.Getenv(helperDirEnv))
	default:
		t.Fatalf("unknown helper mode %q", os.Getenv(helperEnv))
	}
}

// helperCrash appends crashExchange(1), (2), ... with fsync=always and
// prints "acked N" each time the records up to N are synced, until killed.
func helperCrash(t *testing.T, dir string) {
	w, err := Open(dir, Options{Fsync: FsyncAlways, QueueLen: 64}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { // ends when the process is killed
		var last uint64
		for {
			st := w.Stats()
			if st.Dropped != 0 || st.Err != nil {
				fmt.Printf("failed dropped=%d err=%v\n", st.Dropped, st.Err)
				return
			}
			if st.Synced != last {
				last = st.Synced
				fmt.Printf("acked %d\n", last)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	for i := 1; ; i++ {
		for len(w.queue) >= cap(w.queue)/2 {
			time.Sleep(100 * time.Microsecond)
		}
		w.Append(crashExchange(i))
	}
}

func TestCrashKeepsAcknowledgedRecords(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestJournalHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=crash", helperDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked, killed := 0, false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		n, ok := strings.CutPrefix(line, "acked ")
		if !ok {
			cmd.Process.Kill()
			t.Fatalf("child: %s", line)
		}
		if acked, err = strconv.Atoi(n); err != nil {
			t.Fatalf("child: %q: %v", line, err)
		}
		if acked >= 150 && !killed {
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v; want it killed by SIGKILL", err)
	}

	got, rs := readAll(t, dir)
	if len(got) < acked {
		t.Fatalf("read %d records; the child had acknowledged %d", len(got), acked)
	}
	for i, x := range got {
		if d := diffExchange(x, crashExchange(i+1)); d != "" {
			t.Fatalf("record %d of %d (acked %d): %s", i+1, len(got), acked, d)
		}
	}
	t.Logf("acked %d, read %d, torn tails %v", acked, len(got), rs.Torn)
	if rs.Corrupt != 0 || len(rs.Torn) > 1 {
		t.Fatalf("corrupt %d, torn %v; want at most one torn tail and nothing corrupt", rs.Corrupt, rs.Torn)
	}
	if len(rs.Torn) == 1 {
		torn := rs.Torn[0]
		segs := segmentsIn(t, dir)
		if torn.Path != segs[len(segs)-1] {
			t.Fatalf("torn tail in %s; want it in the last segment %s", torn.Path, segs[len(segs)-1])
		}
		offs := recordOffsets(t, torn.Path)
		if len(offs) > 0 && torn.Offset <= offs[len(offs)-1] {
			t.Fatalf("torn tail at %d is not after the last record at %d", torn.Offset, offs[len(offs)-1])
		}
	}
}

// tornAcked is how many records the mid-record crash child writes and
// waits to see synced before the record it is killed in the middle of.
const tornAcked = 12

// helperTorn appends crashExchange(1) .. (tornAcked) with fsync=always,
// one at a time, printing "acked N" once record N is synced. Then it lowers
// its file size limit to the middle of the next record and appends it: the
// kernel writes that record's first half and refuses the rest, so the
// segment ends mid-record exactly there. It prints "torn START END" (where
// the record begins, where the file now ends) and waits to be killed.
func helperTorn(t *testing.T, dir string) {
	signal.Ignore(syscall.SIGXFSZ) // so the write is cut short, not the process
	w, err := Open(dir, Options{Fsync: FsyncAlways, KproxyVersion: "crash-test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, cond func() bool) {
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				fmt.Printf("failed waiting for %s: %+v\n", what, w.Stats())
				os.Exit(1)
			}
		}
	}
	for i := 1; i <= tornAcked; i++ {
		w.Append(crashExchange(i))
		waitFor(fmt.Sprintf("record %d synced", i), func() bool { return w.Stats().Synced == uint64(i) })
		fmt.Printf("acked %d\n", i)
	}
	segs := segmentsIn(t, dir)
	if len(segs) != 1 {
		t.Fatalf("segments %v; want one", segs)
	}
	next := crashExchange(tornAcked + 1)
	start := fileSize(t, segs[0])
	end := start + int64(frameLen+exchangePayloadLen(next))/2
	lim := syscall.Rlimit{Cur: uint64(end), Max: uint64(end)}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	w.Append(next)
	waitFor("the write to be cut short", func() bool { return w.Err() != nil })
	if size := fileSize(t, segs[0]); size != end || !strings.Contains(w.Err().Error(), "file too large") {
		fmt.Printf("failed: segment size %d, writer error %v; want %d bytes, file too large\n", size, w.Err(), end)
		os.Exit(1)
	}
	fmt.Printf("torn %d %d\n", start, end)
	time.Sleep(time.Minute) // the parent kills the process meanwhile
	t.Fatal("not killed")
}

// fileSize is the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// TestCrashMidRecordTornTail kills a writer (fsync=always) whose segment
// ends in the middle of a record, deterministically: the child's file size
// limit cuts the write of its last record in half, it says so, and it is
// sent SIGKILL. Every acknowledged record must be read back, and the half
// record reported as exactly one torn tail, with the segment's path and
// the offset where the record begins.
func TestCrashMidRecordTornTail(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestJournalHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=torn", helperDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked, start, end := 0, int64(-1), int64(-1)
	sc := bufio.NewScanner(out)
	for start < 0 && sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "acked "); ok {
			if acked, err = strconv.Atoi(n); err != nil {
				cmd.Process.Kill()
				t.Fatalf("child: %q: %v", line, err)
			}
			continue
		}
		if _, err := fmt.Sscanf(line, "torn %d %d", &start, &end); err != nil {
			cmd.Process.Kill()
			t.Fatalf("child: %s", line)
		}
	}
	if start < 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child ended without writing its torn record (acked %d)", acked)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v; want it killed by SIGKILL", err)
	}
	if acked != tornAcked {
		t.Fatalf("child acknowledged %d records; want %d", acked, tornAcked)
	}

	segs := segmentsIn(t, dir)
	if len(segs) != 1 {
		t.Fatalf("segments %v; want one", segs)
	}
	if size := fileSize(t, segs[0]); size != end {
		t.Fatalf("segment size %d; want %d, the middle of record %d", size, end, tornAcked+1)
	}
	got, rs := readAll(t, dir)
	if len(got) != acked {
		t.Errorf("read %d records; want the %d acknowledged", len(got), acked)
	}
	for i, x := range got {
		if d := diffExchange(x, crashExchange(i+1)); d != "" {
			t.Fatalf("record %d: %s", i+1, d)
		}
	}
	if rs.Corrupt != 0 || len(rs.Torn) != 1 {
		t.Fatalf("corrupt %d, torn tails %v; want exactly one torn tail and nothing corrupt", rs.Corrupt, rs.Torn)
	}
	torn := rs.Torn[0]
	want := TornTail{Path: segs[0], Offset: start, Size: end, Cause: "a record cut short"}
	if torn != want {
		t.Errorf("torn tail %+v; want %+v", torn, want)
	}
	if s := torn.String(); !strings.Contains(s, segs[0]) || !strings.Contains(s, fmt.Sprintf("offset %d", start)) {
		t.Errorf("torn tail says %q; want the path %s and offset %d", s, segs[0], start)
	}
	if offs := recordOffsets(t, segs[0]); len(offs) != acked || offs[len(offs)-1] >= start {
		t.Errorf("record offsets %v; want %d records, all before %d", offs, acked, start)
	}
}

// fsizeResult is what the write-error child reports.
type fsizeResult struct {
	Err       string
	Accepted  uint64
	Written   uint64
	Synced    uint64
	Discarded uint64
	Logged    []string
}

// helperFileTooLarge writes under a 256 KiB file size limit until the
// writer fails, then checks Append still returns and counts, and prints an
// fsizeResult as JSON.
func helperFileTooLarge(t *testing.T, dir string) {
	signal.Ignore(syscall.SIGXFSZ) // so the write fails with EFBIG instead
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = 256 << 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	w, err := Open(dir, Options{Fsync: FsyncAlways}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000 && w.Err() == nil; i++ {
		appendPaced(w, []*decode.Exchange{testExchange(i)})
	}
	for i := range 100 {
		w.Append(testExchange(i))
	}
	w.Close()
	st := w.Stats()
	res := fsizeResult{Accepted: st.Accepted, Written: st.Written, Synced: st.Synced, Discarded: st.Discarded}
	if st.Err != nil {
		res.Err = st.Err.Error()
	}
	for _, e := range logs.All() {
		res.Logged = append(res.Logged, fmt.Sprintf("%s %s %v", e.Level, e.Message, e.ContextMap()))
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

func TestWriteErrorStopsJournaling(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestJournalHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=fsize", helperDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var res fsizeResult
	line := out[:strings.IndexByte(string(out), '\n')+1]
	if err := json.Unmarshal(line, &res); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	if !strings.Contains(res.Err, "file too large") || !strings.Contains(res.Err, filepath.Base(dir)) {
		t.Fatalf("writer error %q; want the path and \"file too large\"", res.Err)
	}
	if res.Discarded < 100 {
		t.Fatalf("%d discarded; want at least the 100 appended after the failure", res.Discarded)
	}
	var stopped, summary bool
	for _, l := range res.Logged {
		stopped = stopped || strings.HasPrefix(l, "error journaling suspended after a write error")
		summary = summary || strings.HasPrefix(l, "error journal closed after a write error")
	}
	if !stopped || !summary {
		t.Fatalf("logs %q; want the stop and the closing summary at error level", res.Logged)
	}
	got, rs := readAll(t, dir)
	// The failing batch may have partly reached the file before the error.
	if uint64(len(got)) < res.Synced || uint64(len(got)) > res.Accepted {
		t.Fatalf("read %d records; want between the %d synced and the %d accepted", len(got), res.Synced, res.Accepted)
	}
	checkSame(t, got, exchanges(0, len(got)))
	t.Logf("written %d, synced %d, read %d, torn %v", res.Written, res.Synced, len(got), rs.Torn)
}
