//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// report is the JSON document of `kproxy replay --format json`, as far as
// the scenarios read it (issue 3's minimum; docs/timeline-json.md has all).
type report struct {
	Groups []groupReport `json:"groups"`

	path string // where the raw JSON is kept
}

type groupReport struct {
	Group       string       `json:"group"`
	Generations []generation `json:"generations"`
}

type generation struct {
	Generation              int32       `json:"generation"`
	ProtocolType            string      `json:"protocolType"`
	Protocol                string      `json:"protocol"`
	Leader                  string      `json:"leader"`
	Trigger                 trigger     `json:"trigger"`
	StartedAt               time.Time   `json:"startedAt"`
	StableAt                time.Time   `json:"stableAt"`
	StopTheWorldMs          float64     `json:"stopTheWorldMs"`
	Members                 []member    `json:"members"`
	CommitsDuringRevocation []revCommit `json:"commitsDuringRevocation"`
	// FollowUpOf is the generation whose revocations caused this one
	// (cooperative), 0 for none. TODO(e2e): name as in docs/timeline-json.md.
	FollowUpOf int32 `json:"followUpOf"`
}

type trigger struct {
	Kind   string `json:"kind"`
	Member string `json:"member"`
	Reason string `json:"reason"`
}

type member struct {
	MemberID     string             `json:"memberId"`
	InstanceID   string             `json:"instanceId"`
	ClientID     string             `json:"clientId"`
	ClientAddr   string             `json:"clientAddr"`
	JoinedAt     time.Time          `json:"joinedAt"`
	Subscription []string           `json:"subscription"`
	Assignment   map[string][]int32 `json:"assignment"`
	Added        map[string][]int32 `json:"added"`
	Revoked      map[string][]int32 `json:"revoked"`
}

type revCommit struct {
	MemberID   string                       `json:"memberId"`
	At         time.Time                    `json:"at"`
	Generation int32                        `json:"generation"`
	Offsets    map[string]map[string]int64  `json:"offsets"`
	Errors     map[string]map[string]string `json:"errors"`
}

// group returns the report of group id, failing the test without it.
func (r *report) group(t *testing.T, id string) *groupReport {
	t.Helper()
	for i := range r.Groups {
		if r.Groups[i].Group == id {
			return &r.Groups[i]
		}
	}
	t.Fatalf("timeline has no group %q (report kept in %s)", id, r.path)
	return nil
}

// member returns the member with the given client id, or nil.
func (g *generation) member(clientID string) *member {
	for i := range g.Members {
		if g.Members[i].ClientID == clientID {
			return &g.Members[i]
		}
	}
	return nil
}

// clientIDs lists the generation's members by client id, sorted.
func (g *generation) clientIDs() []string {
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.ClientID)
	}
	slices.Sort(ids)
	return ids
}

// find returns the first generation whose members are exactly clientIDs,
// starting at index from, and its index; -1 when there is none.
func (g *groupReport) find(from int, clientIDs ...string) (*generation, int) {
	want := slices.Clone(clientIDs)
	slices.Sort(want)
	for i := from; i < len(g.Generations); i++ {
		if slices.Equal(g.Generations[i].clientIDs(), want) {
			return &g.Generations[i], i
		}
	}
	return nil, -1
}

// mustFind is find that fails the test, showing the generations, when no
// generation has exactly those members.
func (g *groupReport) mustFind(t *testing.T, from int, clientIDs ...string) (*generation, int) {
	t.Helper()
	gen, i := g.find(from, clientIDs...)
	if gen == nil {
		t.Fatalf("group %s: no generation after #%d with members %v; generations:\n%s", g.Group, from, clientIDs, g.summary())
	}
	return gen, i
}

// summary is one line per generation, for failure messages.
func (g *groupReport) summary() string {
	var b strings.Builder
	for i, gen := range g.Generations {
		fmt.Fprintf(&b, "  #%d gen %d %s/%s trigger %+v members:", i, gen.Generation, gen.ProtocolType, gen.Protocol, gen.Trigger)
		for _, m := range gen.Members {
			fmt.Fprintf(&b, " %s=%v", m.ClientID, m.Assignment)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// all returns every partition of a topic->partitions map, sorted, as
// "topic/p" strings.
func all(m ...map[string][]int32) []string {
	var out []string
	for _, x := range m {
		for t, ps := range x {
			for _, p := range ps {
				out = append(out, fmt.Sprintf("%s/%d", t, p))
			}
		}
	}
	slices.Sort(out)
	return out
}

// parts builds the "topic/p" list of one topic's partitions.
func parts(topic string, ps ...int32) []string {
	return all(map[string][]int32{topic: ps})
}
