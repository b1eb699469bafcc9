package journal

import (
	"fmt"
	"io"
	"time"
)

// Defaults for Options' zero values.
const (
	DefaultSegmentBytes = 64 << 20
	DefaultSegmentAge   = time.Hour
	DefaultRetainBytes  = 1 << 30
	DefaultRetainAge    = 7 * 24 * time.Hour
	DefaultQueueLen     = 8192
)

// Options configure a Writer. In every field the zero value means the
// default, and for the limits a negative value means no limit.
type Options struct {
	// KproxyVersion is written into every segment header (at most 1024
	// bytes), so a journal says which build recorded it.
	KproxyVersion string
	// Fsync is the durability policy; default one fsync per second.
	Fsync Fsync
	// SegmentBytes rotates to a new segment before one would grow past it;
	// default 64 MiB. A single record larger than it gets a segment alone.
	SegmentBytes int64
	// SegmentAge rotates a segment that holds records and is older than
	// this; default one hour, negative never.
	SegmentAge time.Duration
	// RetainBytes deletes the oldest segments while all segments in the
	// directory together are larger; default 1 GiB, negative no limit.
	RetainBytes int64
	// RetainAge deletes segments last written longer ago than this; default
	// seven days, negative no limit. The segment being written is never
	// deleted.
	RetainAge time.Duration
	// QueueLen is how many exchanges may wait for the writer before Append
	// drops them; default 8192.
	QueueLen int

	// wrap, when set (tests), wraps each segment's file for record writes:
	// a writer that fails then succeeds stands for a disk that fills up and
	// then has room again.
	wrap func(io.Writer) io.Writer
}

// withDefaults returns o with zero values replaced, or an error naming the
// first invalid field.
func (o Options) withDefaults() (Options, error) {
	if o.Fsync < FsyncNever {
		return o, fmt.Errorf("journal: fsync policy %d is not always, never or an interval", int64(o.Fsync))
	}
	if o.Fsync > 0 && time.Duration(o.Fsync) < time.Millisecond {
		return o, fmt.Errorf("journal: fsync interval %s: must be at least 1ms", time.Duration(o.Fsync))
	}
	if o.QueueLen < 0 {
		return o, fmt.Errorf("journal: queue length %d is negative", o.QueueLen)
	}
	if o.SegmentBytes < 0 {
		return o, fmt.Errorf("journal: segment size %d is negative", o.SegmentBytes)
	}
	if len(o.KproxyVersion) > maxVersionLen {
		return o, fmt.Errorf("journal: kproxy version string is %d bytes; at most %d", len(o.KproxyVersion), maxVersionLen)
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SegmentAge == 0 {
		o.SegmentAge = DefaultSegmentAge
	}
	if o.RetainBytes == 0 {
		o.RetainBytes = DefaultRetainBytes
	}
	if o.RetainAge == 0 {
		o.RetainAge = DefaultRetainAge
	}
	if o.QueueLen == 0 {
		o.QueueLen = DefaultQueueLen
	}
	return o, nil
}
