package synth

import (
	"fmt"
	"math/rand/v2"
)

// Mix is the kind of traffic a Traffic simulates.
type Mix int

const (
	// Realistic is what a proxy in front of a production cluster sees:
	// mostly heartbeats (every 3 s per member) and offset commits (every
	// 6 s per member), the fetch path's ApiVersions and Metadata (each new
	// connection, each member's metadata refresh every 5 minutes, and
	// short-lived clients such as producers and tools that connect, ask for
	// metadata and leave, about one per group every 5 s), and rare
	// rebalances: each group rebalances every 2 to 10 minutes (6 on
	// average), when a member joins or leaves; cooperative-sticky groups
	// rebalance twice (KIP-429 follow-up) when partitions move. Group sizes
	// are mixed: half have 1 to 3 members, a third 4 to 12, the rest 13 up
	// to MaxMembers. Once the groups have started (their first minutes),
	// the mix by exchanges is about 56% Heartbeat, 27% OffsetCommit, 14%
	// ApiVersions and Metadata, 3% FindCoordinator, JoinGroup, SyncGroup and
	// LeaveGroup.
	Realistic Mix = iota
	// RebalanceHeavy is a stress mix: every group rebalances every 15 s to
	// 2 minutes, groups have 2 to MaxMembers members, and there is no fetch
	// path traffic. About one exchange in ten is a FindCoordinator,
	// JoinGroup, SyncGroup or LeaveGroup.
	RebalanceHeavy
)

// ParseMix reads "realistic" or "rebalance-heavy".
func ParseMix(s string) (Mix, error) {
	switch s {
	case "realistic":
		return Realistic, nil
	case "rebalance-heavy":
		return RebalanceHeavy, nil
	}
	return 0, fmt.Errorf("mix %q: want realistic or rebalance-heavy", s)
}

// String is the mix's name as ParseMix reads it.
func (m Mix) String() string {
	if m == RebalanceHeavy {
		return "rebalance-heavy"
	}
	return "realistic"
}

// mixParams are the numbers behind a Mix. Time is counted in rounds: one
// default heartbeat interval of a group (3 s and a little jitter);
// Traffic.rounds converts them to rounds of Options.Heartbeat.
type mixParams struct {
	// steadyMin and steadySpan: a group stays stable for steadyMin +
	// [0, steadySpan) rounds between rebalances.
	steadyMin, steadySpan int
	// fetchPath turns on ApiVersions and Metadata traffic.
	fetchPath bool
	// refreshEvery is how many rounds apart a member refreshes metadata.
	refreshEvery int
	// visitPercent is the chance, per group and round, that a short-lived
	// client connects, asks for the group's topics' metadata and leaves.
	visitPercent int
}

func (m Mix) params() mixParams {
	if m == RebalanceHeavy {
		return mixParams{steadyMin: 5, steadySpan: 40}
	}
	return mixParams{steadyMin: 40, steadySpan: 160, fetchPath: true, refreshEvery: 100, visitPercent: 60}
}

// groupSize draws a group's size between 1 and maxMembers.
func (m Mix) groupSize(rng *rand.Rand, maxMembers int) int {
	if m == RebalanceHeavy {
		return 2 + rng.IntN(max(1, maxMembers-1))
	}
	between := func(lo, hi int) int {
		hi = max(lo, min(hi, maxMembers))
		lo = min(lo, hi)
		return lo + rng.IntN(hi-lo+1)
	}
	switch r := rng.IntN(100); {
	case r < 50:
		return between(1, 3)
	case r < 85:
		return between(4, 12)
	default:
		return between(13, maxMembers)
	}
}

// sizeBounds is how small and large a group of initial size n may become
// as members come and go.
func (m Mix) sizeBounds(n, maxMembers int) (lo, hi int) {
	if m == RebalanceHeavy {
		return 2, maxMembers
	}
	return max(1, n-n/4-1), min(maxMembers, n+n/4+1)
}
