package decode

import "time"

// Blind says that exchanges of Group are missing from At on: Instance, one
// of the proxies whose exchanges a source merges (the fleet's events
// topic), went silent.
type Blind struct {
	Group, Instance string
	At              time.Time
}
