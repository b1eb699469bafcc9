package timeline

import "time"

// Config tunes an Engine. The zero value is usable: every field has a
// default, applied by New.
type Config struct {
	// StormRebalances is how many rebalances of one group within
	// StormWindow make a storm. Default 3.
	StormRebalances int
	// StormWindow is the sliding window for storm detection. Default 5
	// minutes.
	StormWindow time.Duration
	// MaxFollowUps is how many consecutive cooperative follow-up
	// generations are normal; a longer chain is flagged as not settling.
	// Default 3.
	MaxFollowUps int
	// MaxGenerations is how many generations the engine keeps per group;
	// older ones are dropped from memory and from the report, which says
	// how many were dropped. Default 1000, or StreamingGenerations with
	// Streaming.
	MaxGenerations int
	// Streaming keeps only what the entries still to come need, for a
	// consumer of OnEntry that does not ask for a Report (kproxy replay
	// --format text or jsonl): the last StreamingGenerations generations of
	// each group (unless MaxGenerations says fewer), which late SyncGroups,
	// heartbeats and commits naming a recent generation are checked
	// against, no storm once it has ended, and of a storm under way only
	// the rebalances that started it. The entries are the same as without
	// it, and memory no longer grows with the length of the input; Report
	// then covers only what was kept.
	Streaming bool
	// Location is the time zone of the clock times in entry texts and in
	// the text report. Default (nil) UTC, so output does not depend on the
	// machine it is produced on.
	Location *time.Location
	// OnEntry receives each live entry as soon as it is known, on the
	// goroutine calling Add, AddEvents or Close. Nil: entries are dropped
	// (Report still has everything).
	OnEntry func(Entry)
}

// Defaults of Config's storm detection.
const (
	DefaultStormRebalances = 3
	DefaultStormWindow     = 5 * time.Minute
)

// StreamingGenerations is how many generations per group a Streaming
// engine keeps: the latest, the one it is compared with, and a few more for
// stragglers that still name an older generation.
const StreamingGenerations = 4

func (c Config) withDefaults() Config {
	if c.StormRebalances <= 0 {
		c.StormRebalances = DefaultStormRebalances
	}
	if c.StormWindow <= 0 {
		c.StormWindow = DefaultStormWindow
	}
	if c.MaxFollowUps <= 0 {
		c.MaxFollowUps = 3
	}
	if c.MaxGenerations <= 0 {
		c.MaxGenerations = 1000
		if c.Streaming {
			c.MaxGenerations = StreamingGenerations
		}
	}
	if c.Streaming {
		c.MaxGenerations = min(c.MaxGenerations, StreamingGenerations)
	}
	if c.Location == nil {
		c.Location = time.UTC
	}
	return c
}
