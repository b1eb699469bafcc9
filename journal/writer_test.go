package journal

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/decode"
)

func TestWriterRoundTripEveryField(t *testing.T) {
	dir := t.TempDir()
	cases := exchangeCases()
	var want []*decode.Exchange
	for _, name := range []string{"every field", "no response", "empty but present frames", "zero value", "large frame"} {
		want = append(want, cases[name])
	}
	st := writeJournal(t, dir, Options{KproxyVersion: "v1.2.3-test"}, want)
	if st.Written != uint64(len(want)) || st.Segments != 1 {
		t.Fatalf("stats %+v; want %d written in 1 segment", st, len(want))
	}
	got, rs := readAll(t, dir)
	checkSame(t, got, want)
	if len(rs.Journals) != 1 || rs.Journals[0].KproxyVersion != "v1.2.3-test" {
		t.Fatalf("journals %+v; want one written by v1.2.3-test", rs.Journals)
	}
	if rs.Records != uint64(len(want)) || rs.Corrupt != 0 || len(rs.Torn) != 0 {
		t.Fatalf("read stats %+v; want %d records, nothing damaged", rs, len(want))
	}
}

func TestSASLIsNeverWritten(t *testing.T) {
	secret := []byte("user\x00pa55w0rd-secret")
	frame := func(key int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = append(b, 0, 1, 0, 0, 0, 1, 0xff, 0xff)
		return append(b, secret...)
	}
	cases := map[string]*decode.Exchange{
		"SaslHandshake":    {APIKey: 17, Request: frame(17), Response: secret},
		"SaslAuthenticate": {APIKey: 36, Request: frame(36), Response: secret},
		"labelled JoinGroup, frame says SaslAuthenticate": {APIKey: 11, Request: frame(36)},
	}
	dir := t.TempDir()
	w, err := Open(dir, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range cases {
		w.Append(x)
	}
	ok := testExchange(1)
	w.Append(ok)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Redacted != uint64(len(cases)) || st.Written != 1 {
		t.Fatalf("stats %+v; want %d refused, 1 written", st, len(cases))
	}
	for _, p := range segmentsIn(t, dir) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, secret) {
			t.Fatalf("%s contains the SASL secret", p)
		}
	}
	got, _ := readAll(t, dir)
	checkSame(t, got, []*decode.Exchange{ok})
}

func TestPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "journal")
	writeJournal(t, dir, Options{SegmentBytes: 2048}, exchanges(0, 50))
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o700 {
		t.Fatalf("directory mode %v; want 0700", got)
	}
	segs := segmentsIn(t, dir)
	if len(segs) < 2 {
		t.Fatalf("%d segments; want several", len(segs))
	}
	for _, p := range segs {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != 0o600 {
			t.Fatalf("%s mode %v; want 0600", p, got)
		}
	}
}

func TestRotationBySize(t *testing.T) {
	dir := t.TempDir()
	const limit = 4096
	want := exchanges(0, 200)
	st := writeJournal(t, dir, Options{SegmentBytes: limit}, want)
	segs := segmentsIn(t, dir)
	if len(segs) < 5 || uint64(len(segs)) != st.Segments {
		t.Fatalf("%d segment files, %d created; want the same, at least 5", len(segs), st.Segments)
	}
	for _, p := range segs {
		info, _ := os.Stat(p)
		if info.Size() > limit {
			t.Fatalf("%s is %d bytes; want at most %d", p, info.Size(), limit)
		}
	}
	got, rs := readAll(t, dir)
	checkSame(t, got, want)
	if rs.Files != len(segs) || len(rs.Journals) != 1 {
		t.Fatalf("read %d files in %d journals; want %d in 1", rs.Files, len(rs.Journals), len(segs))
	}
}

func TestOversizedRecordGetsASegmentAlone(t *testing.T) {
	dir := t.TempDir()
	big := &decode.Exchange{APIKey: 11, Request: bytes.Repeat([]byte{1}, 10000)}
	want := []*decode.Exchange{testExchange(1), big, testExchange(2)}
	writeJournal(t, dir, Options{SegmentBytes: 4096}, want)
	if n := len(segmentsIn(t, dir)); n != 3 {
		t.Fatalf("%d segments; want 3", n)
	}
	got, _ := readAll(t, dir)
	checkSame(t, got, want)
}

func TestRotationByAge(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{SegmentAge: 20 * time.Millisecond, Fsync: Fsync(5 * time.Millisecond)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Append(testExchange(1))
	deadline := time.Now().Add(10 * time.Second)
	for w.Stats().Segments < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no rotation by age within 10 s; stats %+v", w.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.Append(testExchange(2))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// An empty segment is never rotated for age, so the count settles.
	segs := segmentsIn(t, dir)
	if uint64(len(segs)) != w.Stats().Segments {
		t.Fatalf("%d files; writer created %d", len(segs), w.Stats().Segments)
	}
	got, _ := readAll(t, dir)
	checkSame(t, got, []*decode.Exchange{testExchange(1), testExchange(2)})
}

func TestRetentionBySize(t *testing.T) {
	dir := t.TempDir()
	const seg, keep = 4096, 16384
	want := exchanges(0, 400)
	writeJournal(t, dir, Options{SegmentBytes: seg, RetainBytes: keep}, want)
	var total int64
	for _, p := range segmentsIn(t, dir) {
		info, _ := os.Stat(p)
		total += info.Size()
	}
	// Retention runs at each rotation, so at most the newest segment's
	// growth since then is over the limit.
	if total > keep+seg {
		t.Fatalf("journal holds %d bytes; want at most %d", total, keep+seg)
	}
	got, rs := readAll(t, dir)
	if len(got) == 0 || len(got) >= len(want) {
		t.Fatalf("read %d exchanges; want the newest few of %d", len(got), len(want))
	}
	checkSame(t, got, want[len(want)-len(got):])
	if len(rs.Torn) != 0 || rs.Corrupt != 0 {
		t.Fatalf("read stats %+v; want nothing damaged", rs)
	}
}

func TestRetentionByAge(t *testing.T) {
	dir := t.TempDir()
	// An old journal in the directory, last written ten days ago, and a
	// recent one.
	writeJournal(t, dir, Options{}, exchanges(0, 3))
	old := segmentsIn(t, dir)
	tenDaysAgo := time.Now().Add(-240 * time.Hour)
	for _, p := range old {
		if err := os.Chtimes(p, tenDaysAgo, tenDaysAgo); err != nil {
			t.Fatal(err)
		}
	}
	writeJournal(t, dir, Options{}, exchanges(3, 6))
	w, err := Open(dir, Options{RetainAge: 24 * time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Append(testExchange(6))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range old {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s older than the retention age still exists (%v)", p, err)
		}
	}
	got, rs := readAll(t, dir)
	checkSame(t, got, exchanges(3, 7))
	if len(rs.Journals) != 2 {
		t.Fatalf("%d journals; want the 2 recent ones", len(rs.Journals))
	}
}

func TestDropsAreJournaledAsGaps(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Append(testExchange(1))
	for len(w.queue) > 0 || w.written.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	// Pretend the queue overflowed: the next record written notes the gap.
	w.dropped.Add(5)
	w.Append(testExchange(2))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, rs := readAll(t, dir)
	checkSame(t, got, []*decode.Exchange{testExchange(1), testExchange(2)})
	if rs.Dropped != 5 {
		t.Fatalf("reader counted %d dropped; want 5", rs.Dropped)
	}
}

func TestAppendNeverBlocksAndCountsDrops(t *testing.T) {
	dir := t.TempDir()
	core, logs := observer.New(zap.InfoLevel)
	w, err := Open(dir, Options{QueueLen: 1}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for i := range n {
		w.Append(testExchange(i))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	t.Logf("accepted %d, dropped %d", st.Accepted, st.Dropped)
	if st.Accepted+st.Dropped != n || st.Written != st.Accepted {
		t.Fatalf("stats %+v; want accepted+dropped = %d and every accepted one written", st, n)
	}
	got, rs := readAll(t, dir)
	if uint64(len(got)) != st.Written || rs.Dropped != st.Dropped {
		t.Fatalf("read %d exchanges, %d dropped; writer wrote %d, dropped %d", len(got), rs.Dropped, st.Written, st.Dropped)
	}
	summary := logs.FilterMessageSnippet("journal closed").All()
	if len(summary) != 1 {
		t.Fatalf("%d summary log lines; want 1", len(summary))
	}
	if d := summary[0].ContextMap()["dropped"]; d != st.Dropped {
		t.Fatalf("summary says dropped=%v; want %d", d, st.Dropped)
	}
}

func TestAppendAfterCloseIsDiscarded(t *testing.T) {
	w, err := Open(t.TempDir(), Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Append(testExchange(1))
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if st := w.Stats(); st.Discarded != 1 || st.Written != 0 {
		t.Fatalf("stats %+v; want 1 discarded", st)
	}
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		dir  string
		opts Options
		want string
	}{
		{"dir is a file", file, Options{}, "not a directory"},
		{"dir under a file", filepath.Join(file, "x"), Options{}, "journal: open"},
		{"negative queue", t.TempDir(), Options{QueueLen: -1}, "queue length"},
		{"negative retain bytes", t.TempDir(), Options{RetainBytes: -1}, "negative; 0 means no limit"},
		{"bad fsync", t.TempDir(), Options{Fsync: -3}, "fsync policy"},
		{"tiny fsync interval", t.TempDir(), Options{Fsync: Fsync(time.Microsecond)}, "at least 1ms"},
		{"long version", t.TempDir(), Options{KproxyVersion: strings.Repeat("v", 2000)}, "version string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := Open(c.dir, c.opts, nil)
			if err == nil {
				w.Close()
				t.Fatalf("Open succeeded; want an error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v; want an error containing %q", err, c.want)
			}
		})
	}
}

func TestOpenRemovesUnfinishedSegments(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".journal-20260315T140211.204573Z-01020304-000001.kpj.tmp")
	if err := os.WriteFile(stale, []byte{0x89, 'K'}, 0o600); err != nil {
		t.Fatal(err)
	}
	writeJournal(t, dir, Options{}, exchanges(0, 1))
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temp segment still there (%v)", err)
	}
}

func TestFsyncPolicies(t *testing.T) {
	cases := []struct {
		name       string
		fsync      Fsync
		syncedOpen bool // every record is synced while the writer is still open
		syncedEnd  bool // every record is synced after Close
	}{
		{"always", FsyncAlways, true, true},
		{"interval", Fsync(5 * time.Millisecond), true, true},
		{"never", FsyncNever, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := Open(t.TempDir(), Options{Fsync: c.fsync}, nil)
			if err != nil {
				t.Fatal(err)
			}
			appendPaced(w, exchanges(0, 20))
			if c.syncedOpen {
				deadline := time.Now().Add(10 * time.Second)
				for w.Stats().Synced < 20 {
					if time.Now().After(deadline) {
						t.Fatalf("stats %+v: not all synced within 10 s", w.Stats())
					}
					time.Sleep(time.Millisecond)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			st := w.Stats()
			if want := map[bool]uint64{true: 20, false: 0}[c.syncedEnd]; st.Synced != want || st.Written != 20 {
				t.Fatalf("written %d, synced %d; want 20 written, %d synced", st.Written, st.Synced, want)
			}
		})
	}
}

func TestDropReportsAreRateLimited(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	w, err := Open(t.TempDir(), Options{}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The writer goroutine has ended: drive its tick by hand.
	seen := 0
	reports := func() []observer.LoggedEntry { // the reports since the last call
		all := logs.FilterMessageSnippet("dropped exchanges").All()
		defer func() { seen = len(all) }()
		return all[seen:]
	}
	t0 := w.lastReport
	w.dropped.Add(10)
	w.onTick(t0.Add(time.Second))
	if n := len(reports()); n != 0 {
		t.Fatalf("%d reports 1 s after the last; want none before %s", n, dropReportEvery)
	}
	w.onTick(t0.Add(dropReportEvery))
	r := reports()
	if len(r) != 1 || r[0].ContextMap()["dropped"] != uint64(10) {
		t.Fatalf("reports %v; want one saying 10 dropped", r)
	}
	w.dropped.Add(5)
	w.onTick(t0.Add(dropReportEvery + time.Second))
	if n := len(reports()); n != 0 {
		t.Fatalf("%d reports 1 s after the last; want none", n)
	}
	w.onTick(t0.Add(2 * dropReportEvery))
	r = reports()
	if len(r) != 1 || r[0].ContextMap()["dropped"] != uint64(5) || r[0].ContextMap()["dropped_total"] != uint64(15) {
		t.Fatalf("reports %v; want one saying 5 more, 15 in all", r)
	}
	w.onTick(t0.Add(3 * dropReportEvery))
	if n := len(reports()); n != 0 {
		t.Fatalf("%d reports without new drops; want none", n)
	}
}
