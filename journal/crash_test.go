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
		stopped = stopped || strings.HasPrefix(l, "error journaling stopped after a write error")
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
