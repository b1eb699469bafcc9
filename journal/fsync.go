package journal

import (
	"fmt"
	"strings"
	"time"
)

// Fsync is a durability policy: FsyncAlways, FsyncNever, or a positive
// interval between fsyncs. The zero value means the default, one second.
type Fsync time.Duration

const (
	// FsyncDefault is the zero value: fsync every DefaultFsyncInterval.
	FsyncDefault Fsync = 0
	// FsyncAlways fsyncs after every batch of records drained from the
	// queue, before counting them as synced.
	FsyncAlways Fsync = -1
	// FsyncNever leaves flushing to the operating system.
	FsyncNever Fsync = -2
)

// DefaultFsyncInterval is the interval FsyncDefault stands for.
const DefaultFsyncInterval = time.Second

// ParseFsync parses a policy: "always", "never", or a Go duration such as
// "1s" or "250ms" (the interval between fsyncs, at least 1ms).
func ParseFsync(s string) (Fsync, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "always":
		return FsyncAlways, nil
	case "never":
		return FsyncNever, nil
	case "":
		return 0, fmt.Errorf("journal: fsync policy is empty; want always, never or an interval such as 1s")
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("journal: fsync policy %q: want always, never or an interval such as 1s", s)
	}
	if d < time.Millisecond {
		return 0, fmt.Errorf("journal: fsync interval %q: must be at least 1ms (or use always / never)", s)
	}
	return Fsync(d), nil
}

// Interval is the time between fsyncs, or 0 for FsyncAlways and FsyncNever.
func (f Fsync) Interval() time.Duration {
	switch {
	case f == FsyncDefault:
		return DefaultFsyncInterval
	case f > 0:
		return time.Duration(f)
	}
	return 0
}

// String is the policy in the form ParseFsync reads.
func (f Fsync) String() string {
	switch f {
	case FsyncAlways:
		return "always"
	case FsyncNever:
		return "never"
	}
	return f.Interval().String()
}

// UnmarshalText parses the policy with ParseFsync, for configuration
// decoders.
func (f *Fsync) UnmarshalText(b []byte) error {
	v, err := ParseFsync(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// MarshalText is the policy's String form.
func (f Fsync) MarshalText() ([]byte, error) { return []byte(f.String()), nil }
