package timeline

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kproxy-dev/kproxy/decode"
)

// Retention is how much history a live engine keeps in memory, so that a
// proxy running for months does not grow: the last Generations generations
// of each group, none that ended more than MaxAge before the latest event
// (but always the last StreamingGenerations, which late exchanges are
// checked against, so the entries told are the same as with everything
// kept), and no group that has been quiet for MaxAge (a group that comes
// back after that starts a new story). What is dropped stays in the
// journal, when there is one. A zero field sets no limit of its kind.
type Retention struct {
	Generations int
	MaxAge      time.Duration
}

// StreamRetention is what a consumer of entries alone needs kept (kproxy
// replay --format text or jsonl, through Retaining): the last
// StreamingGenerations generations of each group, which late exchanges are
// checked against, whatever their age, and every group. Memory then does
// not grow with the length of the input; a Report covers only what is kept.
var StreamRetention = Retention{Generations: StreamingGenerations}

// DefaultRetention is serve's: the last 10 generations of each group, for
// at most a day. With 2,000 groups rebalancing often, that is about 20,000
// generations in memory (see the README for what it costs).
var DefaultRetention = Retention{Generations: 10, MaxAge: 24 * time.Hour}

// ParseRetention reads a Retention written as "GENERATIONS,AGE", such as
// "10,24h"; 0 for either means no limit of that kind, and "0" alone no
// limit at all.
func ParseRetention(s string) (Retention, error) {
	if strings.TrimSpace(s) == "0" {
		return Retention{}, nil
	}
	gens, age, ok := strings.Cut(s, ",")
	if !ok {
		return Retention{}, fmt.Errorf("%q: want GENERATIONS,AGE such as 10,24h", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(gens))
	if err != nil || n < 0 {
		return Retention{}, fmt.Errorf("%q: generations %q: want a whole number, 0 for no limit", s, gens)
	}
	r := Retention{Generations: n}
	if age = strings.TrimSpace(age); age != "0" {
		if r.MaxAge, err = time.ParseDuration(age); err != nil || r.MaxAge < 0 {
			return Retention{}, fmt.Errorf("%q: age %q: want a duration such as 24h, 0 for no limit", s, age)
		}
	}
	return r, nil
}

// String writes r as ParseRetention reads it.
func (r Retention) String() string {
	age := "0"
	switch d := r.MaxAge; {
	case d <= 0:
	case d%time.Hour == 0:
		age = strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		age = strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	default:
		age = d.String()
	}
	return strconv.Itoa(r.Generations) + "," + age
}

// Validate says what is wrong with r: fewer generations than late
// exchanges are checked against (StreamingGenerations), which would change
// the entries the timeline tells.
func (r Retention) Validate() error {
	if r.Generations != 0 && r.Generations < StreamingGenerations {
		return fmt.Errorf("%d generations: want at least %d (or 0 for no limit): late exchanges are checked against the last %d",
			r.Generations, StreamingGenerations, StreamingGenerations)
	}
	if r.Generations < 0 || r.MaxAge < 0 {
		return fmt.Errorf("%s: want no negative limit", r)
	}
	return nil
}

// Retain drops, as of the latest event time, what r does not keep: groups
// quiet for r.MaxAge, topics no Metadata answer named for r.MaxAge, then
// of each group the generations that ended more
// than r.MaxAge ago, and the storms that ended before the first generation
// kept (an active storm keeps its latest r.Generations rebalances). With
// an age, it makes the groups that ended an hour ago dormant (dormant.go):
// their history is kept compressed, as it is, until the age forgets it.
// It freezes the generations older than those late exchanges are checked
// against (frozen.go): their reports and views are kept compressed. The
// count of generations, r.Generations, is the engine's
// Config.MaxGenerations, applied as each generation forms: NewLive sets
// it. Retain is called at the pipeline's boundary (see Live), not by the
// handlers, which always work on everything kept. Horizon says from when
// on the history kept is whole.
func (e *Engine) Retain(r Retention) {
	var cutoff time.Time
	if r.MaxAge > 0 {
		cutoff = e.now.Add(-r.MaxAge)
	}
	e.slept = e.slept[:0]
	var enc *zstd.Encoder // the sleeping groups', made at the first: see newDormantEncoder
	kept := e.groups[:0]
	for _, g := range e.groups {
		if !cutoff.IsZero() && g.lastSeen.Before(cutoff) {
			e.forget(g)
			continue
		}
		g.index = len(kept)
		kept = append(kept, g)
		g.retain(r, cutoff)
		if r.MaxAge > 0 && g.canSleep(e.now) {
			if enc == nil {
				enc = newDormantEncoder()
			}
			g.sleep(enc)
			e.slept = append(e.slept, g.id)
		}
	}
	clear(e.groups[len(kept):])
	e.groups = kept
	if !cutoff.IsZero() {
		e.topics.forget(cutoff)
	}
	e.quiet = e.quiet[:0]
	for range e.groups {
		e.quiet = append(e.quiet, time.Time{}) // the next sweep visits every group once
	}
}

// Retaining is an Engine that applies a Retention as events come, at the
// pipeline's boundary: after the batch of events during which event time
// passed a minute since the last Retain. Its handlers work as an Engine's
// always do; what they tell is the same, and only what is kept differs.
// Live is one that also publishes snapshots.
type Retaining struct {
	*Engine
	retain     Retention
	retainedAt time.Time // event time of the last Retain
}

// NewRetaining returns an Engine with cfg keeping what r says (see
// Retention). Config.MaxGenerations is r.Generations when that is set. A
// zero r keeps what New's Engine keeps.
func NewRetaining(cfg Config, r Retention) *Retaining {
	if r.Generations > 0 {
		cfg.MaxGenerations = r.Generations
	}
	return &Retaining{Engine: New(cfg), retain: r}
}

// AddEvents adds events (see Engine.AddEvents), then applies the
// retention once a minute of event time.
func (e *Retaining) AddEvents(events []decode.Event) {
	e.Engine.AddEvents(events)
	if e.retain != (Retention{}) && e.now.Sub(e.retainedAt) >= time.Minute {
		e.Retain(e.retain)
		e.retainedAt = e.now
	}
}

// Horizon is the time from which the history kept is whole: nothing that
// happened after it was dropped by Retain or Config.MaxGenerations. Zero
// when nothing was dropped.
func (e *Engine) Horizon() time.Time { return e.horizon }

// dropped notes that history up to t was dropped.
func (e *Engine) dropped(t time.Time) {
	if t.After(e.horizon) {
		e.horizon = t
	}
}

// forget drops a group and everything it holds. An earlier history of a
// group id (re-created, or woken from sleep) leaves the later one known.
func (e *Engine) forget(g *group) {
	if e.byID[g.id] == g {
		delete(e.byID, g.id)
	}
	e.dropped(g.lastSeen)
}

// retain applies r to one group; cutoff is the latest event time less
// r.MaxAge, zero without an age limit.
func (g *group) retain(r Retention, cutoff time.Time) {
	n := 0 // the count, r.Generations, is Config.MaxGenerations (see keep)
	if !cutoff.IsZero() {
		// A generation ended when the next one started. The last
		// StreamingGenerations stay whatever their age: late exchanges
		// are checked against them, and entries must not change.
		for n < len(g.gens)-StreamingGenerations {
			next := genTime(g.gens[n+1])
			if next.IsZero() || !next.Before(cutoff) {
				break
			}
			n++
		}
	}
	g.dropOldest(n)
	if len(g.gens) == 0 {
		return
	}
	// Who owned what is asked of the generation before a handover's,
	// nearly always the latest but one: the others' caches go.
	for _, gen := range g.gens[:max(len(g.gens)-2, 0)] {
		gen.index.shrink()
	}
	// Commits and departures are added to the latest generation (and
	// the next) only: the lists of the others are done.
	for _, gen := range g.gens[:len(g.gens)-1] {
		gen.clip()
	}
	g.freezeOld()
	first := genTime(g.gens[0])
	s := &g.storm
	keep := s.storms[:0]
	for _, st := range s.storms {
		if st.ended && !first.IsZero() && st.endedAt.Before(first) {
			g.e.dropped(st.endedAt)
			continue
		}
		keep = append(keep, st)
	}
	clear(s.storms[len(keep):])
	s.storms = keep
	if st := s.active; st != nil && r.Generations > 0 && len(st.marks) > r.Generations {
		st.marks = append(st.marks[:0:0], st.marks[len(st.marks)-r.Generations:]...)
	}
}

// clip frees the room the lists of gen grew into beyond their length:
// they grow by append, which doubles them, and are kept while the
// generation is (see group.retain).
func (gen *generation) clip() {
	gen.suspects = clipped(gen.suspects)
	if gen.frozen != nil {
		return // the others are dropped
	}
	gen.commits = clipped(gen.commits)
	gen.departed = clipped(gen.departed)
	gen.rejoins = clipped(gen.rejoins)
}

// clipped is s in an array of its length, s itself when it has no room
// beyond its length, nil when nil.
func clipped[S ~[]E, E any](s S) S {
	if cap(s) == len(s) {
		return s
	}
	return append(make(S, 0, len(s)), s...)
}

// dropOldest drops the n oldest generations. The first generation kept
// forgets its predecessor so that the dropped ones can be collected.
func (g *group) dropOldest(n int) {
	if n <= 0 {
		return
	}
	for _, old := range g.gens[:n] {
		if g.byNum[old.num] == old {
			delete(g.byNum, old.num)
		}
	}
	g.dropped += n
	g.gens = append(g.gens[:0:0], g.gens[n:]...)
	g.gens[0].prev = nil
	if t := genTime(g.gens[0]); !t.IsZero() {
		g.e.dropped(t)
	} else {
		g.e.dropped(g.e.now)
	}
}

// genTime is when a generation's rebalance started, or what is known
// closest to it; zero when nothing is.
func genTime(gen *generation) time.Time {
	for _, t := range []time.Time{gen.start, gen.joinEnd, gen.stableAt} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
