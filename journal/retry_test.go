package journal

import (
	"io"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/decode"
)

// fullDisk wraps segment files: while full is set, every write fails with
// ENOSPC, as on a full disk.
type fullDisk struct {
	full   atomic.Bool
	failed atomic.Int64
}

func (d *fullDisk) wrap(w io.Writer) io.Writer { return diskWriter{d, w} }

type diskWriter struct {
	d *fullDisk
	w io.Writer
}

func (w diskWriter) Write(p []byte) (int, error) {
	if w.d.full.Load() {
		w.d.failed.Add(1)
		return 0, &writeError{syscall.ENOSPC}
	}
	return w.w.Write(p)
}

// writeError is what os.File returns: an error wrapping the errno.
type writeError struct{ errno syscall.Errno }

func (e *writeError) Error() string { return "write: " + e.errno.Error() }
func (e *writeError) Unwrap() error { return e.errno }

// TestJournalResumesAfterDiskFull: a write error (ENOSPC) suspends
// journaling; once writes succeed again it resumes in a new segment whose
// first records are a gap counting every exchange lost meanwhile and a
// suspension record blaming the write error, and Close reports no error.
// Exchanges the proxy dropped from a full queue meanwhile are a gap of
// their own, not blamed on the disk.
func TestJournalResumesAfterDiskFull(t *testing.T) {
	dir := t.TempDir()
	disk := &fullDisk{}
	w, err := Open(dir, Options{Fsync: FsyncAlways, wrap: disk.wrap}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitWritten := func(n uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for w.Stats().Written < n {
			if time.Now().After(deadline) {
				t.Fatalf("written %d; want %d", w.Stats().Written, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	before, lostN, after := exchanges(0, 3), 5, exchanges(100, 102)
	for _, x := range before {
		w.Append(x)
	}
	waitWritten(3)

	disk.full.Store(true)
	for _, x := range exchanges(50, 50+lostN) {
		w.Append(x)
		time.Sleep(2 * time.Millisecond) // some fail writing, the rest are discarded
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no write error reported while the disk is full")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.Dropped(4, time.Now()) // the proxy's queue overflowed meanwhile
	disk.full.Store(false)
	deadline = time.Now().Add(10 * time.Second) // the first retry is a second after the error
	for w.Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("journaling never resumed: %v", w.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, x := range after {
		w.Append(x)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close after resuming: %v", err)
	}
	st := w.Stats()
	got, rs := readAll(t, dir)
	checkSame(t, got, append(append([]*decode.Exchange(nil), before...), after...))
	if rs.Dropped != uint64(lostN+4) || rs.WriteErrorLost != uint64(lostN) || rs.Suspensions != 1 {
		t.Errorf("gap records count %d lost exchanges, %d of them in %d suspensions; want %d, %d in 1",
			rs.Dropped, rs.WriteErrorLost, rs.Suspensions, lostN+4, lostN)
	}
	if !strings.Contains(rs.WriteError, "no space left on device") {
		t.Errorf("suspension record says %q; want the write error", rs.WriteError)
	}
	if st.Segments != 2 || disk.failed.Load() == 0 {
		t.Errorf("segments %d, failed writes %d; want 2 segments and some failures", st.Segments, disk.failed.Load())
	}
}

// TestResumeFailureDoublesBackoff: while the disk stays full, each resume
// attempt reopens a segment (its header is written unwrapped) and then fails
// writing the gap record; every such failure must wait twice as long as the
// one before, not start again from retryMin.
func TestResumeFailureDoublesBackoff(t *testing.T) {
	dir := t.TempDir()
	disk := &fullDisk{}
	core, logs := observer.New(zap.ErrorLevel)
	w, err := Open(dir, Options{Fsync: FsyncAlways, wrap: disk.wrap}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	disk.full.Store(true)
	w.Append(testExchange(1))
	suspended := func() []time.Duration {
		var d []time.Duration
		for _, e := range logs.FilterMessageSnippet("journaling suspended").All() {
			d = append(d, e.ContextMap()["retry_in"].(time.Duration))
		}
		return d
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(suspended()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("suspensions logged %v; want 3 within 20s", suspended())
		}
		time.Sleep(20 * time.Millisecond)
	}
	disk.full.Store(false)
	if err := w.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	got := suspended()[:3]
	want := []time.Duration{retryMin, 2 * retryMin, 4 * retryMin}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("retry delays after each failure %v; want %v", got, want)
		}
	}
}
