package journal

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// Writer appends exchanges to a journal directory. Append and
// Dropped are safe for concurrent use and never block; one goroutine,
// started by Open and ended by Close, owns the files.
type Writer struct {
	dir  string
	opts Options
	log  *zap.Logger

	queue     chan item
	closing   chan struct{} // closed by Close
	done      chan struct{} // closed when run returns
	closeOnce sync.Once

	closed  atomic.Bool // Close was called: Append discards
	stopped atomic.Bool // a write error suspended journaling: Append discards

	accepted, dropped, tooLarge, discarded, redacted atomic.Uint64
	written, synced, bytes, segments                 atomic.Uint64
	// upstreamDropped counts the exchanges the proxy reported dropped
	// before they reached the Writer (Dropped); unqueued, those of them
	// whose gap found the queue full, to be noted with the next record.
	upstreamDropped, unqueued atomic.Uint64

	errMu sync.Mutex
	err   error // why journaling is suspended

	// Owned by run.
	id         [16]byte
	seq        uint64
	f          *os.File
	bw         *bufio.Writer
	path       string
	segSize    int64
	segCreated time.Time
	segRecords int
	// certs are the client certificate subjects the current segment has
	// named (recClientCert), by connection id.
	certs      map[uint64]string
	scratch    []byte
	unflushed  uint64 // records buffered since the last flush
	unsynced   uint64 // records written since the last fsync
	lastSync   time.Time
	noted      uint64 // dropped+unqueued already written as gap records
	reported   uint64 // drops already logged
	lastReport time.Time
	lastRetain time.Time
	// While suspended after a write error (retry.go).
	retryAt, failedAt time.Time
	failCause         string // the write error that suspended journaling
	retryDelay        time.Duration
	lost              uint64 // records accepted but never written since failedAt
	discardedAtFail   uint64 // discarded before failedAt
}

const (
	// dropReportEvery bounds how often dropped exchanges are logged.
	dropReportEvery = 5 * time.Second
	// retainEvery is how often age retention runs between rotations.
	retainEvery = time.Minute
	// maxBatch bounds the records written between two flushes.
	maxBatch = 1024
	// scratchKeep is the largest encoding buffer kept between records.
	scratchKeep  = 1 << 20
	writeBufSize = 256 << 10
)

// Open creates dir (mode 0700) if needed, starts a new journal in it with
// its first segment, and starts the writer goroutine. log receives the
// error that stops journaling, drop reports and a summary at Close; nil
// means no logging. Call Close to flush and stop.
func Open(dir string, opts Options, log *zap.Logger) (*Writer, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	w := &Writer{
		dir:     dir,
		opts:    opts,
		log:     log.With(zap.String("journal_dir", dir)),
		queue:   make(chan item, opts.QueueLen),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	if info, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("journal: open %s: not a directory", dir)
	} else if info.Mode().Perm()&0o077 != 0 {
		w.log.Warn("journal directory is readable by others; journals hold client traffic, consider chmod 700",
			zap.Stringer("mode", info.Mode().Perm()))
	}
	if removed, err := removeStaleTemps(dir); err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	} else if len(removed) > 0 {
		w.log.Info("journal removed unfinished segment files", zap.Strings("paths", removed))
	}
	if _, err := rand.Read(w.id[:]); err != nil {
		return nil, fmt.Errorf("journal: open %s: journal id: %w", dir, err)
	}
	now := time.Now()
	if err := w.newSegment(now); err != nil {
		return nil, err
	}
	w.lastSync, w.lastReport = now, now
	w.retain(now)
	go w.run()
	return w, nil
}

// Append queues x for writing and returns at once. When the queue is full
// the exchange is dropped and counted; after a write error or Close it is
// discarded and counted (while journaling is suspended by a write error,
// the gap record written when it resumes counts them too). SASL exchanges (SaslHandshake, SaslAuthenticate)
// are never written. The Writer keeps x until it is written: the caller
// must not modify it afterwards.
func (w *Writer) Append(x *decode.Exchange) {
	if x == nil {
		return
	}
	if isSASL(x) {
		w.redacted.Add(1)
		return
	}
	if w.closed.Load() || w.stopped.Load() {
		w.discarded.Add(1)
		return
	}
	if exchangePayloadLen(x) > MaxRecordSize {
		w.tooLarge.Add(1)
		return
	}
	select {
	case w.queue <- item{x: x}:
		w.accepted.Add(1)
	default:
		w.dropped.Add(1)
	}
}

// item is what the queue holds: an exchange, or (x nil) a gap of exchanges
// dropped before they reached the Writer.
type item struct {
	x   *decode.Exchange
	gap uint64
	at  time.Time
}

// Dropped records that n exchanges were dropped at time at before they
// reached the Writer (the proxy's observer queue was full), so that the
// journal holds a gap record in their place: readers count them as
// dropped, and a replay is known to be incomplete. With Append, it makes a
// Writer a consumer of the pipeline's exchanges, which calls it in order.
// It never blocks: when the queue is full, the gap is noted before the
// next record instead.
func (w *Writer) Dropped(n uint64, at time.Time) {
	if n == 0 {
		return
	}
	w.upstreamDropped.Add(n)
	if w.closed.Load() {
		return
	}
	if w.stopped.Load() {
		// Noted as a gap once journaling resumes: these were lost to a
		// full queue, not to the write error.
		w.unqueued.Add(n)
		return
	}
	select {
	case w.queue <- item{gap: n, at: at}:
	default:
		w.unqueued.Add(n)
	}
}

// isSASL reports whether x is a SASL exchange, which carries credentials and
// is never journaled (design.md). Both the header field and the frame's own
// api key are checked, so a mislabelled exchange is refused too.
func isSASL(x *decode.Exchange) bool {
	sasl := func(k int16) bool { return k == 17 || k == 36 } // SaslHandshake, SaslAuthenticate
	if sasl(x.APIKey) {
		return true
	}
	return len(x.Request) >= 2 && sasl(int16(binary.BigEndian.Uint16(x.Request)))
}

// Stats counts what a Writer did with the exchanges handed to it.
type Stats struct {
	// Queued is how many exchanges wait in the queue now.
	Queued int
	// Accepted exchanges were taken into the queue.
	Accepted uint64
	// Written exchange records were flushed to the operating system.
	Written uint64
	// Synced records are covered by a completed fsync; with FsyncNever it
	// stays 0.
	Synced uint64
	// Bytes written, segment headers and framing included.
	Bytes uint64
	// Segments created.
	Segments uint64
	// Dropped exchanges found the queue full: the disk did not keep up.
	Dropped uint64
	// UpstreamDropped exchanges never reached the Writer: the proxy
	// dropped them (Dropped) and the journal notes them as gaps.
	UpstreamDropped uint64
	// TooLarge exchanges exceeded MaxRecordSize.
	TooLarge uint64
	// Discarded exchanges arrived while a write error had journaling
	// suspended, or after Close.
	Discarded uint64
	// Redacted SASL exchanges were refused.
	Redacted uint64
	// Err is the write error that has journaling suspended, nil while it
	// runs (again).
	Err error
}

// Stats returns the counters so far.
func (w *Writer) Stats() Stats {
	return Stats{
		Queued:          len(w.queue),
		Accepted:        w.accepted.Load(),
		Written:         w.written.Load(),
		Synced:          w.synced.Load(),
		Bytes:           w.bytes.Load(),
		Segments:        w.segments.Load(),
		Dropped:         w.dropped.Load(),
		UpstreamDropped: w.upstreamDropped.Load(),
		TooLarge:        w.tooLarge.Load(),
		Discarded:       w.discarded.Load(),
		Redacted:        w.redacted.Load(),
		Err:             w.Err(),
	}
}

// Err is the write error that has journaling suspended, or nil.
func (w *Writer) Err() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// Close writes what is queued, fsyncs (unless FsyncNever), closes the
// segment, logs a summary and stops the writer goroutine. It returns the
// error that stopped journaling, if any. Exchanges appended after Close are
// discarded. Close is idempotent.
func (w *Writer) Close() error {
	w.closeOnce.Do(func() {
		w.closed.Store(true)
		close(w.closing)
		<-w.done
		w.logSummary()
	})
	return w.Err()
}

// run is the writer goroutine. It owns the segment file and ends when Close
// closes w.closing, after draining the queue.
func (w *Writer) run() {
	defer close(w.done)
	tick := time.NewTicker(w.tickEvery())
	defer tick.Stop()
	for {
		select {
		case it := <-w.queue:
			w.writeBatch(it)
		case now := <-tick.C:
			w.onTick(now)
		case <-w.closing:
			w.finish()
			return
		}
	}
}

// tickEvery is the period of the housekeeping tick: the fsync interval,
// but at least once a second for rotation by age and drop reports.
func (w *Writer) tickEvery() time.Duration {
	if iv := w.opts.Fsync.Interval(); iv > 0 && iv < time.Second {
		return iv
	}
	return time.Second
}

// writeBatch writes it and whatever else is queued (up to maxBatch), then
// hands it to the OS, so a killed process loses at most the batch in hand.
func (w *Writer) writeBatch(it item) {
	w.writeItem(it)
drain:
	for i := 1; i < maxBatch; i++ {
		select {
		case it := <-w.queue:
			w.writeItem(it)
		default:
			break drain
		}
	}
	w.flush()
	if w.opts.Fsync == FsyncAlways {
		w.sync()
	}
}

// writeItem writes a queued exchange or gap.
func (w *Writer) writeItem(it item) {
	if it.x != nil {
		w.write(it.x)
		return
	}
	if w.f == nil {
		w.unqueued.Add(it.gap) // noted once journaling resumes
		return
	}
	if !w.noteDrops() {
		return
	}
	w.writeGap(it.at, it.gap)
}

// noteDrops writes a gap record for the drops not noted yet (the Writer's
// own, and the proxy's whose gap did not fit in the queue), if any. It
// reports false when journaling has stopped.
func (w *Writer) noteDrops() bool {
	d := w.dropped.Load() + w.unqueued.Load()
	if d <= w.noted {
		return true
	}
	if !w.writeGap(time.Now(), d-w.noted) {
		return false
	}
	w.noted = d
	return true
}

// writeGap writes a gap record of n exchanges noted at t.
func (w *Writer) writeGap(t time.Time, n uint64) bool {
	w.scratch = appendFrame(w.scratch[:0], func(b []byte) []byte { return appendGap(b, t, n) })
	return w.writeFrame(w.scratch)
}

// writeSuspended writes, after a write error, the gap of the n exchanges
// lost while journaling was suspended and the suspension record saying
// why, in one write: a reader finds both or neither.
func (w *Writer) writeSuspended(t time.Time, n uint64) bool {
	w.scratch = appendFrame(w.scratch[:0], func(b []byte) []byte { return appendGap(b, t, n) })
	w.scratch = appendFrame(w.scratch, func(b []byte) []byte {
		return appendSuspension(b, suspension{At: t, Since: w.failedAt, Lost: n, Err: w.failCause})
	})
	return w.writeFrame(w.scratch)
}

// write encodes one exchange into the current segment, preceded by a gap
// record if exchanges were dropped since the last one.
func (w *Writer) write(x *decode.Exchange) {
	if w.f == nil {
		w.discarded.Add(1)
		return
	}
	if !w.noteDrops() {
		w.discarded.Add(1)
		return
	}
	w.scratch = appendFrame(w.scratch[:0], func(b []byte) []byte { return appendExchange(b, x) })
	if x.ClientCert != "" && !w.writeClientCert(x, len(w.scratch)) {
		w.discarded.Add(1)
		return
	}
	if !w.writeFrame(w.scratch) {
		w.discarded.Add(1)
		return
	}
	w.unflushed++
	w.unsynced++
	w.segRecords++
	if cap(w.scratch) > scratchKeep {
		w.scratch = nil
	}
}

// writeClientCert writes the record naming the client certificate of x's
// connection unless the segment already has it. It first makes room for it
// and for x's frame of n bytes, rotating when the segment has none, so that
// the exchange lands in the segment that names its certificate. It reports
// false when journaling has stopped.
func (w *Writer) writeClientCert(x *decode.Exchange, n int) bool {
	if !w.room(clientCertFrameLen(x) + n) {
		return false
	}
	if w.certs[x.ConnID] == x.ClientCert {
		return true
	}
	frame := appendFrame(nil, func(b []byte) []byte { return appendClientCert(b, x.ConnID, x.ClientCert) })
	if !w.writeFrame(frame) {
		return false
	}
	if w.certs == nil {
		w.certs = map[uint64]string{}
	}
	w.certs[x.ConnID] = x.ClientCert
	return true
}

// appendFrame appends a record frame around the payload enc appends.
func appendFrame(dst []byte, enc func([]byte) []byte) []byte {
	start := len(dst)
	dst = append(dst, syncMarker[:]...)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // length and CRC, filled below
	dst = enc(dst)
	frame := dst[start:]
	binary.BigEndian.PutUint32(frame[4:], uint32(len(frame)-frameLen))
	binary.BigEndian.PutUint32(frame[8:], frameChecksum(frame[4:8], frame[frameLen:]))
	return dst
}

// writeFrame writes one frame, rotating first if the segment would grow
// past its size limit. It reports false when journaling has stopped.
func (w *Writer) writeFrame(frame []byte) bool {
	if !w.room(len(frame)) {
		return false
	}
	if _, err := w.bw.Write(frame); err != nil {
		w.fail(fmt.Errorf("journal: write %s: %w", w.path, err))
		return false
	}
	w.segSize += int64(len(frame))
	w.bytes.Add(uint64(len(frame)))
	return true
}

// room rotates if the segment would grow past its size limit with n more
// bytes. It reports false when journaling has stopped.
func (w *Writer) room(n int) bool {
	if w.segRecords > 0 && w.segSize+int64(n) > w.opts.SegmentBytes {
		w.rotate(time.Now())
	}
	return w.f != nil
}

// flush hands buffered records to the OS.
func (w *Writer) flush() {
	if w.f == nil {
		return
	}
	if err := w.bw.Flush(); err != nil {
		w.fail(fmt.Errorf("journal: write %s: %w", w.path, err))
		return
	}
	w.written.Add(w.unflushed)
	w.unflushed = 0
}

// sync flushes and fsyncs the segment, then counts its records as synced.
func (w *Writer) sync() {
	w.flush()
	if w.f == nil {
		return
	}
	if w.unsynced > 0 {
		if err := w.f.Sync(); err != nil {
			w.fail(fmt.Errorf("journal: fsync %s: %w", w.path, err))
			return
		}
		w.synced.Add(w.unsynced)
		w.unsynced = 0
	}
	w.lastSync = time.Now()
}

// onTick runs the periodic work: interval fsync, rotation by age, drop
// reports and retention by age.
func (w *Writer) onTick(now time.Time) {
	if iv := w.opts.Fsync.Interval(); iv > 0 && now.Sub(w.lastSync) >= iv {
		w.sync()
	}
	if w.f != nil && w.opts.SegmentAge > 0 && w.segRecords > 0 && now.Sub(w.segCreated) >= w.opts.SegmentAge {
		w.rotate(now)
	}
	if w.stopped.Load() && !now.Before(w.retryAt) {
		w.resume(now)
	}
	if now.Sub(w.lastReport) >= dropReportEvery {
		w.reportDrops(now)
	}
	if w.f != nil && now.Sub(w.lastRetain) >= retainEvery {
		w.retain(now)
	}
}

// reportDrops logs exchanges dropped since the last report, if any.
func (w *Writer) reportDrops(now time.Time) {
	w.lastReport = now
	d := w.dropped.Load()
	if d == w.reported {
		return
	}
	w.log.Warn("journal dropped exchanges: the disk is not keeping up; traffic is still forwarded",
		zap.Uint64("dropped", d-w.reported), zap.Uint64("dropped_total", d), zap.Int("queue_len", w.opts.QueueLen))
	w.reported = d
}

// rotate closes the current segment and starts the next one.
func (w *Writer) rotate(now time.Time) {
	if w.opts.Fsync == FsyncNever {
		w.flush()
	} else {
		w.sync()
	}
	if w.f == nil {
		return
	}
	if err := w.f.Close(); err != nil {
		w.fail(fmt.Errorf("journal: close %s: %w", w.path, err))
		return
	}
	w.f = nil
	if err := w.newSegment(now); err != nil {
		w.fail(err) // createSegment names the file
		return
	}
	w.retain(now)
}

// newSegment creates the next segment and makes it current.
func (w *Writer) newSegment(now time.Time) error {
	w.seq++
	h := segmentHeader{Created: now, JournalID: w.id, Seq: w.seq, KproxyVersion: w.opts.KproxyVersion}
	f, path, err := createSegment(w.dir, &h, w.opts.Fsync != FsyncNever)
	if err != nil {
		return err
	}
	w.f, w.path = f, path
	var out io.Writer = f
	if w.opts.wrap != nil {
		out = w.opts.wrap(f)
	}
	if w.bw == nil {
		w.bw = bufio.NewWriterSize(out, writeBufSize)
	} else {
		w.bw.Reset(out)
	}
	w.segSize = int64(len(appendHeader(nil, &h)))
	w.segCreated = now
	w.segRecords = 0
	clear(w.certs)
	w.segments.Add(1)
	w.bytes.Add(uint64(w.segSize))
	return nil
}

// retain deletes the segments retention no longer keeps. A failure to
// delete is logged but does not stop journaling.
func (w *Writer) retain(now time.Time) {
	w.lastRetain = now
	segs, err := listSegments(w.dir)
	if err != nil {
		w.log.Error("journal retention: cannot list segments", zap.Error(err))
		return
	}
	var oldest time.Time
	if w.opts.RetainAge > 0 {
		oldest = now.Add(-w.opts.RetainAge)
	}
	for _, s := range retention(segs, w.path, w.opts.RetainBytes, oldest) {
		if err := os.Remove(s.path); err != nil {
			w.log.Error("journal retention: cannot delete segment", zap.String("path", s.path), zap.Error(err))
			continue
		}
		w.log.Debug("journal retention deleted segment", zap.String("path", s.path), zap.Int64("bytes", s.size))
	}
}

// fail suspends journaling after a write error: the segment is closed,
// everything queued or appended until journaling resumes is discarded
// (counted, and noted by a gap record when it resumes, retry.go), and the
// error is logged. Traffic is not affected.
func (w *Writer) fail(err error) {
	w.errMu.Lock()
	w.err = err
	w.errMu.Unlock()
	// A failure while already suspended is a resume attempt that reopened a
	// segment and failed writing to it (retry.go): back off further, as
	// when reopening fails. Only the first failure starts from retryMin.
	if w.stopped.Load() {
		w.retryDelay = min(2*w.retryDelay, retryMax)
	} else {
		w.discardedAtFail = w.discarded.Load()
		w.failedAt = time.Now()
		w.failCause = err.Error()
		w.retryDelay = retryMin
	}
	w.stopped.Store(true)
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	// Records buffered but not handed to the OS are lost.
	w.lost += w.unflushed
	w.unflushed, w.unsynced = 0, 0
	w.retryAt = time.Now().Add(w.retryDelay)
	w.log.Error("journaling suspended after a write error; traffic is still forwarded; retrying with backoff",
		zap.String("path", w.path), zap.Duration("retry_in", w.retryDelay), zap.Error(err))
}

// finish drains the queue, notes the last drops, and closes the segment.
func (w *Writer) finish() {
	for n := len(w.queue); n > 0; n-- {
		w.writeItem(<-w.queue)
	}
	if w.f != nil {
		w.noteDrops()
	}
	if w.opts.Fsync == FsyncNever {
		w.flush()
	} else {
		w.sync()
	}
	if w.f != nil {
		if err := w.f.Close(); err != nil {
			w.fail(fmt.Errorf("journal: close %s: %w", w.path, err))
		}
		w.f = nil
	}
}

// logSummary logs what the Writer did, at warn level if it lost anything.
func (w *Writer) logSummary() {
	s := w.Stats()
	fields := []zap.Field{
		zap.Uint64("written", s.Written), zap.Uint64("bytes", s.Bytes), zap.Uint64("segments", s.Segments),
		zap.Uint64("dropped", s.Dropped), zap.Uint64("upstream_dropped", s.UpstreamDropped), zap.Uint64("too_large", s.TooLarge),
		zap.Uint64("discarded", s.Discarded), zap.Uint64("sasl_refused", s.Redacted),
	}
	switch {
	case s.Err != nil:
		w.log.Error("journal closed after a write error", append(fields, zap.Error(s.Err))...)
	case s.Dropped+s.UpstreamDropped+s.TooLarge+s.Discarded > 0:
		w.log.Warn("journal closed; some exchanges were not journaled", fields...)
	default:
		w.log.Info("journal closed", fields...)
	}
}
