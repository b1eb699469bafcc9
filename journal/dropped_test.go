package journal

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestUpstreamDropsAreJournaledAsGaps: drops reported with Dropped (the
// proxy's observer queue overflowing) become gap records in order between
// the exchanges around them, are counted by readers, and appear in the
// Writer's stats and summary. When the queue has no room for the gap, it is
// noted before the next record instead.
func TestUpstreamDropsAreJournaledAsGaps(t *testing.T) {
	tests := []struct {
		name      string
		queueFull bool // the gap found the queue full
	}{
		{"gap queued in order", false},
		{"gap noted with the next record", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			core, logs := observer.New(zap.InfoLevel)
			w, err := Open(dir, Options{}, zap.New(core))
			if err != nil {
				t.Fatal(err)
			}
			w.Append(testExchange(1))
			if tt.queueFull {
				// What Dropped does when the queue has no room: the gap
				// goes before the next record written, so wait for the
				// first to be written.
				for len(w.queue) > 0 || w.written.Load() < 1 {
					time.Sleep(time.Millisecond)
				}
				w.upstreamDropped.Add(7)
				w.unqueued.Add(7)
			} else {
				w.Dropped(7, testBase)
			}
			w.Append(testExchange(2))
			w.Dropped(0, testBase) // nothing: no gap record
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if st := w.Stats(); st.UpstreamDropped != 7 || st.Dropped != 0 || st.Written != 2 {
				t.Errorf("stats %+v; want 7 upstream drops, none of its own, 2 written", st)
			}
			got, rs := readAll(t, dir)
			checkSame(t, got, []*decode.Exchange{testExchange(1), testExchange(2)})
			if rs.Dropped != 7 {
				t.Errorf("reader counted %d dropped; want 7", rs.Dropped)
			}
			if kinds := recordTypes(t, dir); string(kinds) != string([]byte{recExchange, recGap, recExchange}) {
				t.Errorf("record types %v; want exchange, gap, exchange", kinds)
			}
			summary := logs.FilterMessageSnippet("journal closed").All()
			if len(summary) != 1 || summary[0].ContextMap()["upstream_dropped"] != uint64(7) {
				t.Errorf("summary %v; want one line with upstream_dropped=7", summary)
			}
		})
	}
}

// TestDroppedAfterCloseIsCounted: drops reported after Close are counted
// and never block.
func TestDroppedAfterCloseIsCounted(t *testing.T) {
	w, err := Open(t.TempDir(), Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Dropped(3, time.Now())
	if st := w.Stats(); st.UpstreamDropped != 3 {
		t.Fatalf("upstream dropped %d; want 3", st.UpstreamDropped)
	}
}

// recordTypes walks the one segment in dir by the documented layout
// (docs/journal-format.md) and returns the type of each record.
func recordTypes(t *testing.T, dir string) []byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.kpj"))
	if err != nil || len(paths) != 1 {
		t.Fatalf("segments %v (%v); want one", paths, err)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var types []byte
	for off := int(binary.BigEndian.Uint16(b[10:])); off < len(b); {
		if off+frameLen > len(b) {
			t.Fatalf("record frame cut short at %d", off)
		}
		n := int(binary.BigEndian.Uint32(b[off+4:]))
		off += frameLen
		if n == 0 || off+n > len(b) {
			t.Fatalf("record of %d bytes at %d runs past the end (%d)", n, off, len(b))
		}
		types = append(types, b[off])
		off += n
	}
	return types
}
