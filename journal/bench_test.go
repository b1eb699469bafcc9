package journal

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// benchExchange returns an exchange whose request is size bytes.
func benchExchange(i, size int) *decode.Exchange {
	x := testExchange(i)
	x.Request = make([]byte, size)
	x.Request[1] = 11
	return x
}

// BenchmarkAppend measures the writer with the default policy (fsync every
// second): bytes are record frames on disk. The producer waits while the
// queue is half full, so nothing is dropped and the writer is never idle.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{{"req=200B", 200}, {"req=1KiB", 1 << 10}, {"req=16KiB", 16 << 10}} {
		b.Run(c.name, func(b *testing.B) {
			xs := make([]*decode.Exchange, 1024)
			for i := range xs {
				xs[i] = benchExchange(i, c.size)
			}
			b.SetBytes(int64(frameLen + exchangePayloadLen(xs[0])))
			w, err := Open(b.TempDir(), Options{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				for len(w.queue) >= cap(w.queue)/2 {
					time.Sleep(100 * time.Microsecond)
				}
				w.Append(xs[i%len(xs)])
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			st := w.Stats()
			if st.Dropped != 0 || st.Written != uint64(b.N) {
				b.Fatalf("written %d, dropped %d; want %d written", st.Written, st.Dropped, b.N)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		})
	}
}

// BenchmarkRead measures the reader over a journal of test exchanges
// (about 200 bytes each), reopening it whenever it runs out.
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	const n = 100_000
	w, err := Open(dir, Options{Fsync: FsyncNever}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		for len(w.queue) >= cap(w.queue)/2 {
			time.Sleep(100 * time.Microsecond)
		}
		w.Append(testExchange(i))
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(w.Stats().Bytes / n))
	b.ResetTimer()
	start := time.Now()
	var r *Reader
	for i := 0; i < b.N; i++ {
		if r == nil {
			if r, err = OpenReader(dir); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := r.Next(); errors.Is(err, io.EOF) {
			r.Close()
			r = nil
			i--
		} else if err != nil {
			b.Fatal(err)
		}
	}
	if r != nil {
		r.Close()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
}
