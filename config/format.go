package config

import (
	"strconv"
	"time"
)

// formatSize writes n bytes as parseSize reads it, in the largest of
// sizeUnits that divides it: 64<<20 is "64MiB", 1000 is "1000".
func formatSize(n int64) string {
	var unit string
	var mult int64 = 1
	for _, u := range sizeUnits {
		if u.mult > mult && n%u.mult == 0 {
			unit, mult = u.suffix, u.mult
		}
	}
	if n == 0 {
		unit, mult = "", 1
	}
	return strconv.FormatInt(n/mult, 10) + unit
}

// formatDuration writes d as parseDuration reads it, without the zero
// units time.Duration.String adds: 10*time.Minute is "10m", not "10m0s";
// 168*time.Hour is "168h".
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}
