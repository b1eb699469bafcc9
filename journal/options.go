package journal

import (
	"fmt"
	"io"
	"time"
)

// Defaults: of SegmentBytes and QueueLen, which their zero value stands
// for, and of the limits, which DefaultOptions sets.
const (
	DefaultSegmentBytes = 64 << 20
	DefaultSegmentAge   = time.Hour
	DefaultRetainBytes  = 1 << 30
	DefaultRetainAge    = 7 * 24 * time.Hour
	DefaultQueueLen     = 8192
)

// Options configure a Writer. The zero value of Fsync, SegmentBytes and
// QueueLen means the default. SegmentAge, RetainBytes and RetainAge are
// limits, whose zero means no limit as everywhere in kproxy's
// configuration (config.Config embeds Options); DefaultOptions holds
// their defaults. Negative values are refused. The mapstructure tags are
// the keys of `kproxy serve`'s settings.
type Options struct {
	// KproxyVersion is written into every segment header (at most 1024
	// bytes), so a journal says which build recorded it.
	KproxyVersion string `mapstructure:"-"`
	// Fsync is the durability policy; default one fsync per second.
	Fsync Fsync `mapstructure:"journal-fsync"`
	// SegmentBytes rotates to a new segment before one would grow past it;
	// default 64 MiB. A single record larger than it gets a segment alone.
	SegmentBytes int64 `mapstructure:"journal-segment-size"`
	// SegmentAge rotates a segment that holds records and is older than
	// this; 0 never.
	SegmentAge time.Duration `mapstructure:"journal-segment-age"`
	// RetainBytes deletes the oldest segments while all segments in the
	// directory together are larger; 0 no limit.
	RetainBytes int64 `mapstructure:"journal-retain-size"`
	// RetainAge deletes segments last written longer ago than this; 0 no
	// limit. The segment being written is never deleted.
	RetainAge time.Duration `mapstructure:"journal-retain-age"`
	// QueueLen is how many exchanges may wait for the writer before Append
	// drops them; default 8192.
	QueueLen int `mapstructure:"-"`

	// wrap, when set (tests), wraps each segment's file for record writes:
	// a writer that fails then succeeds stands for a disk that fills up and
	// then has room again.
	wrap func(io.Writer) io.Writer
}

// DefaultOptions are the defaults of every option, the limits included.
func DefaultOptions() Options {
	return Options{
		Fsync:        Fsync(DefaultFsyncInterval),
		SegmentBytes: DefaultSegmentBytes,
		SegmentAge:   DefaultSegmentAge,
		RetainBytes:  DefaultRetainBytes,
		RetainAge:    DefaultRetainAge,
		QueueLen:     DefaultQueueLen,
	}
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
	if o.SegmentAge < 0 || o.RetainBytes < 0 || o.RetainAge < 0 {
		return o, fmt.Errorf("journal: segment age %s, retain bytes %d, retain age %s: negative; 0 means no limit",
			o.SegmentAge, o.RetainBytes, o.RetainAge)
	}
	if len(o.KproxyVersion) > maxVersionLen {
		return o, fmt.Errorf("journal: kproxy version string is %d bytes; at most %d", len(o.KproxyVersion), maxVersionLen)
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.QueueLen == 0 {
		o.QueueLen = DefaultQueueLen
	}
	return o, nil
}
