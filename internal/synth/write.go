package synth

import (
	"fmt"
	"time"

	"github.com/kproxy-dev/kproxy/journal"
)

// WriteOptions say where and how much Write writes.
type WriteOptions struct {
	// Dir is the journal directory (created if missing).
	Dir string
	// Bytes: Write stops once at least this many bytes are written. The
	// writer reports its size as it goes, so the exact number of exchanges
	// written for a given Bytes varies from run to run.
	Bytes int64
	// Exchanges, when set, makes Write stop after exactly this many
	// exchanges instead (Bytes is then ignored): the same options always
	// write the same journal.
	Exchanges uint64
	// SegmentBytes is the segment size; default the journal's.
	SegmentBytes int64
}

// Written is what Write wrote.
type Written struct {
	Exchanges uint64
	Bytes     uint64
	Segments  uint64
	// Counts is the number of exchanges of each API key.
	Counts map[int16]uint64
}

// Write writes t's exchanges to a new journal in w.Dir until it holds
// w.Bytes bytes, or w.Exchanges exchanges when that is set. It never drops an exchange: it waits whenever the
// writer's queue is half full.
func Write(t *Traffic, w WriteOptions) (Written, error) {
	jw, err := journal.Open(w.Dir, journal.Options{
		KproxyVersion: "kproxy-journalgen",
		Fsync:         journal.FsyncNever,
		SegmentBytes:  w.SegmentBytes,
	}, nil)
	if err != nil {
		return Written{}, err
	}
	var n uint64
	for w.Exchanges == 0 || n < w.Exchanges {
		if n%256 == 0 {
			st := jw.Stats()
			if st.Err != nil || (w.Exchanges == 0 && st.Bytes >= uint64(w.Bytes)) {
				break
			}
			for st.Queued > journal.DefaultQueueLen/2 {
				time.Sleep(200 * time.Microsecond)
				st = jw.Stats()
			}
		}
		jw.Append(t.Next())
		n++
	}
	if err := jw.Close(); err != nil {
		return Written{}, err
	}
	st := jw.Stats()
	if st.Err != nil {
		return Written{}, st.Err
	}
	if st.Dropped > 0 || st.Written != n {
		return Written{}, fmt.Errorf("journal writer wrote %d of %d exchanges (dropped %d)", st.Written, n, st.Dropped)
	}
	return Written{Exchanges: st.Written, Bytes: st.Bytes, Segments: st.Segments, Counts: t.Counts()}, nil
}
