package timeline

import "time"

// Config tunes an Engine. The zero value is usable: every field has a
// default, applied by New.
type Config struct {
	// StormRebalances is how many rebalances of one group within
	// StormWindow make a storm. Default 3.
	StormRebalances int `mapstructure:"storm-rebalances"`
	// StormWindow is the sliding window for storm detection. Default 5
	// minutes.
	StormWindow time.Duration `mapstructure:"storm-window"`
	// MaxFollowUps is how many consecutive cooperative follow-up
	// generations are normal; a longer chain is flagged as not settling.
	// Default 3.
	MaxFollowUps int `mapstructure:"-"`
	// MaxGenerations is how many generations the engine keeps per group;
	// older ones are dropped from memory and from the report, which says
	// how many were dropped. Default 1000. (Retention, applied at the
	// pipeline's boundary by Live and Retaining, sets it.)
	MaxGenerations int `mapstructure:"-"`
	// Location is the time zone of the clock times in entry texts and in
	// the text report. Default (nil) UTC, so output does not depend on the
	// machine it is produced on.
	Location *time.Location `mapstructure:"-"`
	// Groups, when not empty, are the only groups whose story is told.
	// The events of the others keep no state but still move the clock, so
	// that sweeps, and with them inferred session timeouts, come as if
	// every group were told: a reader of a few groups' history from a
	// long journal (the admin API, replay --group) holds only theirs, and
	// gets the story a whole replay tells of them. (Only a Blind notice
	// of a group not told moves no clock: one comes from the fleet topic,
	// at most as late as the events around it.)
	Groups []string `mapstructure:"-"`
	// OnEntry receives each live entry as soon as it is known, on the
	// goroutine calling Add, AddEvents or Close. Nil: entries are dropped
	// (Report still has everything).
	OnEntry func(Entry) `mapstructure:"-"`
	// PublishEvery, for a Live engine, is how often at most AddEvents and
	// Advance publish a Snapshot (wall clock), on the owner's goroutine:
	// readers see the traffic at most this late. Zero: only Publish
	// publishes (a replay, which reads no snapshot).
	PublishEvery time.Duration `mapstructure:"-"`
}

// Defaults of Config's storm detection.
const (
	DefaultStormRebalances = 3
	DefaultStormWindow     = 5 * time.Minute
)

// StreamingGenerations is the fewest generations per group an engine may
// keep without changing the entries it tells (see StreamRetention): the
// latest, the one it is compared with, and a few more for stragglers that
// still name an older generation.
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
	}
	if c.Location == nil {
		c.Location = time.UTC
	}
	return c
}
