package journal

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/saturate"
)

// Reader streams the exchanges of one or more journals. Records of one
// journal come in the order they were written, which is the order the proxy
// observed them: when their responses arrived. Several journals are merged
// by that same completion time (decode.Exchange.CompletedAt), so the
// merged stream is what one proxy in front of all those clients would
// have observed, the order the timeline needs. Memory does not grow with
// the journals' size: one segment of each journal is open at a time
// and one exchange of each is held. A Reader is not safe for concurrent
// use.
type Reader struct {
	streams []*stream
	heap    mergeHeap
	stats   ReadStats
	err     error // deferred until the exchange before it was returned
	// popped is the stream whose head was returned last. It reads on at
	// the Reader's next call, so that the exchange NextInto returned can
	// alias its buffer until then.
	popped *stream
}

// ReadStats describes what a Reader read so far, and the journals.
type ReadStats struct {
	// Journals found, in the order of their first segment's creation.
	Journals []JournalInfo
	// Files is the number of segment files; Bytes their total size.
	Files int
	Bytes int64
	// BytesRead is how far the Reader got, in bytes of the segment files.
	BytesRead int64
	// Records is the number of exchanges returned.
	Records uint64
	// Corrupt counts damaged records skipped: each damaged stretch of a
	// segment followed by a valid record, and each record whose checksum
	// was right but whose contents did not parse.
	Corrupt uint64
	// Damaged says where the first of them were (at most MaxDamageListed),
	// in the order read.
	Damaged []Damage
	// Unknown counts records of a type this version does not know.
	Unknown uint64
	// Dropped counts exchanges the writers dropped, from their gap records
	// (at most the largest uint64: a sum past it stays there).
	Dropped uint64
	// WriteErrorLost is the part of Dropped lost while a write error (a
	// full disk, say) had journaling suspended, from the writers'
	// suspension records; the rest found a queue full. Suspensions counts
	// those records, and WriteError is what the first one's error said.
	WriteErrorLost uint64
	Suspensions    uint64
	WriteError     string
	// First and Last are the earliest and latest RequestAt returned.
	First, Last time.Time
	// Torn lists the segments that end in an incomplete or damaged tail.
	Torn []TornTail
}

// JournalInfo describes one journal: the segments one Writer wrote.
type JournalInfo struct {
	ID            [16]byte
	KproxyVersion string
	// Created is the creation time of its first segment found.
	Created time.Time
	// Segments are the paths of its segment files in order.
	Segments []string
}

// TornTail is a segment whose last bytes do not form a valid record, as a
// writer killed mid-write leaves it. Every complete record before Offset
// was read.
type TornTail struct {
	Path   string
	Offset int64
	// Size is the file size; Size-Offset bytes were ignored.
	Size int64
	// Cause says what the first ignored bytes looked like.
	Cause string
}

// String names the segment, the offset of the torn tail, what it looked
// like and how many bytes were ignored.
func (t TornTail) String() string {
	return fmt.Sprintf("%s: torn tail at offset %d (%s); the last %d bytes were ignored",
		t.Path, t.Offset, t.Cause, t.Size-t.Offset)
}

// MaxDamageListed bounds ReadStats.Damaged: a badly damaged journal is
// still read in bounded memory.
const MaxDamageListed = 100

// Damage is a corrupt record skipped in the middle of a segment: a damaged
// stretch followed by a valid record, or a record whose checksum was right
// but whose contents did not parse. Every record after it was read.
type Damage struct {
	Path   string
	Offset int64
	Bytes  int64 // skipped from Offset
	// Cause says what the first skipped bytes looked like.
	Cause string
}

// String names the segment, the offset of the damage, what it looked like
// and how many bytes were skipped.
func (d Damage) String() string {
	return fmt.Sprintf("%s: corrupt record at offset %d (%s); %d bytes were skipped", d.Path, d.Offset, d.Cause, d.Bytes)
}

// segmentRef is a segment found by OpenReader.
type segmentRef struct {
	path string
	size int64
	hdr  segmentHeader
}

// stream reads one journal's segments in sequence.
type stream struct {
	order    int
	segs     []segmentRef
	next     int // index of the segment to open after cur
	f        *os.File
	cur      *scanner
	curIdx   int
	head     *decode.Exchange // the scanner's: valid until it reads on
	doneRead int64            // bytes of the segments finished
}

// OpenReader opens the journals at paths: segment files, or directories
// whose *.kpj files are read. Segments are grouped into journals by the
// journal id in their headers and ordered by sequence number, so a
// directory and a list of its files read the same. It fails with a clear
// error on a file that is empty, not a segment, has a truncated or corrupt
// header, or was written by a newer format version (a *VersionError).
func OpenReader(paths ...string) (*Reader, error) {
	if len(paths) == 0 {
		return nil, errors.New("journal: no journal path given")
	}
	files, err := expandPaths(paths)
	if err != nil {
		return nil, err
	}
	refs := make([]segmentRef, 0, len(files))
	for _, p := range files {
		ref, err := readSegmentRef(p)
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	r := &Reader{}
	if err := r.group(refs); err != nil {
		return nil, err
	}
	for _, s := range r.streams {
		if err := r.advance(s, nil); err != nil {
			r.Close()
			return nil, err
		}
		if s.head != nil {
			heap.Push(&r.heap, s)
		}
	}
	return r, nil
}

// expandPaths lists the segment files named by paths, each once.
func expandPaths(paths []string) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	add := func(p string) {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("journal: open %s: %w", p, err)
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		segs, err := listSegments(p)
		if err != nil {
			return nil, fmt.Errorf("journal: open %s: %w", p, err)
		}
		if len(segs) == 0 {
			return nil, fmt.Errorf("journal: open %s: no journal segments (*%s) in this directory", p, SegmentExt)
		}
		for _, s := range segs {
			add(s.path)
		}
	}
	return files, nil
}

// readSegmentRef reads the header of the segment at path.
func readSegmentRef(path string) (segmentRef, error) {
	f, err := os.Open(path)
	if err != nil {
		return segmentRef{}, fmt.Errorf("journal: open %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return segmentRef{}, fmt.Errorf("journal: open %s: %w", path, err)
	}
	if info.IsDir() {
		return segmentRef{}, fmt.Errorf("journal: open %s: is a directory", path)
	}
	h, err := readHeader(bufio.NewReaderSize(f, headerMaxLen))
	if err != nil {
		return segmentRef{}, fmt.Errorf("journal: %s: %w", path, err)
	}
	return segmentRef{path: path, size: info.Size(), hdr: h}, nil
}

// group sorts segments into journals, one stream each.
func (r *Reader) group(refs []segmentRef) error {
	byID := map[[16]byte][]segmentRef{}
	for _, ref := range refs {
		byID[ref.hdr.JournalID] = append(byID[ref.hdr.JournalID], ref)
		r.stats.Files++
		r.stats.Bytes += ref.size
	}
	for _, segs := range byID {
		sort.Slice(segs, func(i, j int) bool { return segs[i].hdr.Seq < segs[j].hdr.Seq })
		for i := 1; i < len(segs); i++ {
			if segs[i].hdr.Seq == segs[i-1].hdr.Seq {
				return fmt.Errorf("journal: %s and %s are both segment %d of journal %x",
					segs[i-1].path, segs[i].path, segs[i].hdr.Seq, segs[i].hdr.JournalID)
			}
		}
		r.streams = append(r.streams, &stream{segs: segs})
	}
	sort.Slice(r.streams, func(i, j int) bool {
		a, b := r.streams[i].segs[0].hdr, r.streams[j].segs[0].hdr
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		return string(a.JournalID[:]) < string(b.JournalID[:])
	})
	for i, s := range r.streams {
		s.order = i
		info := JournalInfo{ID: s.segs[0].hdr.JournalID, KproxyVersion: s.segs[0].hdr.KproxyVersion, Created: s.segs[0].hdr.Created}
		for _, seg := range s.segs {
			info.Segments = append(info.Segments, seg.path)
		}
		r.stats.Journals = append(r.stats.Journals, info)
	}
	return nil
}

// Next returns the next exchange, or io.EOF after the last one. Torn tails
// and damaged records do not stop reading; they are counted in Stats. The
// exchange is the caller's to keep.
func (r *Reader) Next() (*decode.Exchange, error) {
	if err := r.ready(nil); err != nil {
		return nil, err
	}
	x := cloneExchange(r.heap[0].head)
	r.pop(x)
	return x, nil
}

// NextInto is Next into x: it overwrites x with the next exchange, whose
// frames alias the Reader's read buffer instead of being copied, so that
// reading copies no frame and allocates only x's strings (once). The caller
// must not keep x's frames, nor anything aliasing them, past its next call
// to the Reader (Next, NextInto, Stats or Close); decode.Decoder's events
// never alias them. It returns io.EOF after the last exchange.
func (r *Reader) NextInto(x *decode.Exchange) error {
	if err := r.ready(x); err != nil {
		return err
	}
	if h := r.heap[0].head; h != x {
		*x = *h
	}
	r.pop(x)
	return nil
}

// ready reads on the stream popped last (see readOn for into), then
// returns the deferred error, or io.EOF when there is nothing left.
func (r *Reader) ready(into *decode.Exchange) error {
	r.readOn(into)
	if r.err != nil {
		err := r.err
		r.err = nil
		return err
	}
	if r.heap.Len() == 0 {
		return io.EOF
	}
	return nil
}

// pop counts x, copied from the head of the first stream, and leaves that
// stream to read on at the next call (readOn).
func (r *Reader) pop(x *decode.Exchange) {
	r.popped = r.heap[0]
	r.stats.Records++
	if r.stats.First.IsZero() || x.RequestAt.Before(r.stats.First) {
		r.stats.First = x.RequestAt
	}
	if x.RequestAt.After(r.stats.Last) {
		r.stats.Last = x.RequestAt
	}
}

// readOn advances the stream popped last, still first in the heap, and
// puts it in its place (or out, at its end). An error is deferred to the
// caller's next call, after the exchange returned before it.
//
// into, when not nil, is the exchange NextInto fills. When the stream is
// the only one left, its next exchange is the one returned, whatever it
// is: it is parsed straight into into, which becomes the stream's head
// until the stream reads on. That spares copying an exchange just parsed,
// whose loads would wait for the stores of the parse (a store-to-load
// forwarding stall). Nothing compares a lone stream's head.
func (r *Reader) readOn(into *decode.Exchange) {
	s := r.popped
	if s == nil {
		return
	}
	r.popped = nil
	if len(r.heap) != 1 {
		into = nil
	}
	if err := r.advance(s, into); err != nil {
		r.err = err
	}
	switch {
	case s.head == nil:
		heap.Pop(&r.heap)
	case len(r.heap) > 1:
		heap.Fix(&r.heap, 0)
	}
}

// cloneExchange copies x, its frames in one new array.
func cloneExchange(x *decode.Exchange) *decode.Exchange {
	c := *x
	b := make([]byte, len(x.Request)+len(x.Response))
	c.Request = frameInto(b[:0:len(x.Request)], x.Request)
	c.Response = frameInto(b[len(x.Request):len(x.Request)], x.Response)
	return &c
}

// frameInto copies frame into buf's array (grown if needed), keeping a nil
// frame nil and an empty one empty.
func frameInto(buf, frame []byte) []byte {
	if frame == nil {
		return nil
	}
	buf = append(buf[:0], frame...)
	if buf == nil {
		buf = []byte{}
	}
	return buf
}

// advance reads s's next exchange into s.head, nil at its end. The
// exchange is parsed into into, or into the scanner's when into is nil.
func (r *Reader) advance(s *stream, into *decode.Exchange) error {
	s.head = nil
	for {
		if s.cur == nil {
			if s.next == len(s.segs) {
				return nil
			}
			if err := s.open(); err != nil {
				return err
			}
		}
		rec, err := s.cur.next(into)
		if errors.Is(err, io.EOF) {
			r.finishSegment(s)
			continue
		}
		if err != nil {
			r.finishSegment(s)
			return err
		}
		if rec.susp != nil {
			r.noteSuspension(rec.susp)
			continue
		}
		if rec.x == nil {
			r.stats.Dropped = saturate.Add(r.stats.Dropped, rec.dropped)
			continue
		}
		s.head = rec.x
		return nil
	}
}

// noteSuspension counts a suspension record's losses.
func (r *Reader) noteSuspension(susp *suspension) {
	r.stats.WriteErrorLost = saturate.Add(r.stats.WriteErrorLost, susp.Lost)
	r.stats.Suspensions++
	if r.stats.WriteError == "" {
		r.stats.WriteError = susp.Err
	}
}

// open opens s's next segment.
func (s *stream) open() error {
	seg := s.segs[s.next]
	f, err := os.Open(seg.path)
	if err != nil {
		return fmt.Errorf("journal: open %s: %w", seg.path, err)
	}
	sc, err := newScanner(seg.path, f, seg.size)
	if err != nil {
		f.Close()
		return err
	}
	s.f, s.cur, s.curIdx = f, sc, s.next
	s.next++
	return nil
}

// finishSegment closes s's current segment and adds up its counts.
func (r *Reader) finishSegment(s *stream) {
	sc := s.cur
	r.stats.Corrupt += sc.corrupt
	r.stats.Damaged = appendDamage(r.stats.Damaged, sc.damaged)
	r.stats.Unknown += sc.unknown
	seg := s.segs[s.curIdx]
	if sc.tornAt >= 0 {
		r.stats.Torn = append(r.stats.Torn, TornTail{Path: seg.path, Offset: sc.tornAt, Size: seg.size, Cause: sc.tornCause})
	}
	s.doneRead += seg.size
	s.f.Close()
	s.f, s.cur = nil, nil
}

// Stats returns what the Reader has read so far. After io.EOF it covers
// the whole input.
func (r *Reader) Stats() ReadStats {
	r.readOn(nil) // as far as it got before returning the last exchange
	st := r.stats
	st.Torn = append([]TornTail(nil), r.stats.Torn...)
	st.Damaged = append([]Damage(nil), r.stats.Damaged...)
	st.BytesRead = 0
	for _, s := range r.streams {
		st.BytesRead += s.doneRead
		if s.cur != nil {
			st.BytesRead += s.cur.off
			st.Corrupt += s.cur.corrupt
			st.Damaged = appendDamage(st.Damaged, s.cur.damaged)
			st.Unknown += s.cur.unknown
		}
	}
	return st
}

// appendDamage appends more to list, up to MaxDamageListed in all.
func appendDamage(list, more []Damage) []Damage {
	return append(list, more[:min(len(more), max(0, MaxDamageListed-len(list)))]...)
}

// Close closes the open segment files.
func (r *Reader) Close() error {
	for _, s := range r.streams {
		if s.f != nil {
			s.f.Close()
			s.f, s.cur = nil, nil
		}
	}
	r.heap, r.popped = nil, nil
	return nil
}

// mergeHeap orders streams by their head's CompletedAt, then by stream
// order so that equal times merge deterministically.
type mergeHeap []*stream

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	a, b := h[i].head.CompletedAt(), h[j].head.CompletedAt()
	if !a.Equal(b) {
		return a.Before(b)
	}
	return h[i].order < h[j].order
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*stream)) }
func (h *mergeHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}
