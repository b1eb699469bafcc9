package config

import (
	"fmt"
	"strconv"
)

// checkLimits checks the settings that bound what clients can cost kproxy:
// frames kept in memory, connections, timeouts.
func checkLimits(p *problems, c *Config) {
	// Above max-frame-size is allowed: the smaller bound applies.
	if c.MaxGroupFrameSize < MinMaxFrameSize {
		p.add(KeyMaxGroupFrameSize, strconv.Itoa(int(c.MaxGroupFrameSize)),
			fmt.Sprintf("below the minimum of %d bytes (64KiB)", MinMaxFrameSize))
	}
	if c.MaxObservedFrameSize < MinMaxFrameSize {
		p.add(KeyMaxObservedFrame, strconv.Itoa(int(c.MaxObservedFrameSize)),
			fmt.Sprintf("below the minimum of %d bytes (64KiB)", MinMaxFrameSize))
	}
	if c.MaxBufferedBytes < 2*int64(c.MaxObservedFrameSize) {
		p.add(KeyMaxBufferedBytes, strconv.FormatInt(c.MaxBufferedBytes, 10),
			fmt.Sprintf("below twice %s (%d): two frames must fit", KeyMaxObservedFrame, c.MaxObservedFrameSize))
	}
	checkPositive(p, KeyFrameReadTimeout, c.FrameReadTimeout)
	checkPositive(p, KeyIdleTimeout, c.IdleTimeout)
	if c.MaxConnections < 0 {
		p.add(KeyMaxConnections, strconv.Itoa(c.MaxConnections), "negative; 0 means derived from the file-descriptor limit")
	}
	if c.MaxConnectionsPerIP < 0 {
		p.add(KeyMaxConnsPerIP, strconv.Itoa(c.MaxConnectionsPerIP), "negative; 0 means no limit")
	}
}
