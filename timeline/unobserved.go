package timeline

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// unobserved counts the exchanges of interest the proxy could not keep
// (too large, decode.Unobserved): the timeline cannot tell what they said,
// nor which group they concerned, so the report says how many there were,
// of which APIs and when, as something it could not see.
type unobserved struct {
	count       int
	apis        map[string]bool
	first, last time.Time
}

func (u *unobserved) add(ev *decode.Event) {
	if u.apis == nil {
		u.apis = map[string]bool{}
	}
	u.count++
	u.apis[decode.APIName(ev.APIKey)] = true
	if u.first.IsZero() || ev.At.Before(u.first) {
		u.first = ev.At
	}
	u.last = later(u.last, ev.At)
}

// UnobservedReport is what the timeline could not see: group exchanges too
// large for the proxy to keep (its --max-observed-frame-size).
type UnobservedReport struct {
	Exchanges int      `json:"exchanges"` // how many
	APIs      []string `json:"apis"`      // their APIs, sorted
	First     string   `json:"first"`     // the first one's request time
	Last      string   `json:"last"`      // the last one's request time
}

func (u *unobserved) report() *UnobservedReport {
	if u.count == 0 {
		return nil
	}
	apis := make([]string, 0, len(u.apis))
	for a := range u.apis {
		apis = append(apis, a)
	}
	slices.Sort(apis)
	return &UnobservedReport{Exchanges: u.count, APIs: apis, First: stamp(u.first), Last: stamp(u.last)}
}

// unobservedLine is the text report's line for r.
func unobservedLine(r *UnobservedReport) string {
	return fmt.Sprintf("%d group exchanges (%s) were too large to observe, from %s to %s: the timeline may miss what they said",
		r.Exchanges, strings.Join(r.APIs, ", "), r.First, r.Last)
}
