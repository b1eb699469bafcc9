package journal

import (
	"time"

	"go.uber.org/zap"
)

// Backoff between attempts to resume journaling after a write error (a
// full disk, say): it doubles from retryMin up to retryMax.
const (
	retryMin = time.Second
	retryMax = time.Minute
)

// resume tries to start a new segment after a write error suspended
// journaling. On success it writes a gap record for the exchanges lost
// meanwhile (those buffered when the write failed, and those discarded
// since) and a suspension record naming the write error, clears the error
// and logs that journaling resumed; otherwise it waits twice as long
// before the next attempt. Run by the writer goroutine's tick.
func (w *Writer) resume(now time.Time) {
	if err := w.newSegment(now); err != nil {
		w.retryDelay = min(2*w.retryDelay, retryMax)
		w.retryAt = now.Add(w.retryDelay)
		w.log.Debug("journal still cannot write; retrying", zap.Duration("retry_in", w.retryDelay), zap.Error(err))
		return
	}
	lost := w.lost + w.discarded.Load() - w.discardedAtFail
	if lost > 0 && !w.writeSuspended(now, lost) {
		return // failed again: fail set the next attempt
	}
	w.flush()
	if w.f == nil {
		return
	}
	w.lost = 0
	w.errMu.Lock()
	w.err = nil
	w.errMu.Unlock()
	w.stopped.Store(false)
	w.log.Info("journaling resumed after a write error; a gap record marks the exchanges lost",
		zap.Uint64("lost", lost), zap.Duration("suspended_for", now.Sub(w.failedAt)), zap.String("path", w.path))
}
