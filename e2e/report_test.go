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
// the scenarios read it. docs/timeline-json.md is the contract; null (unknown)
// decodes to a zero value here, except where a pointer tells it from none.
type report struct {
	Groups []groupReport `json:"groups"`

	path string // where the raw JSON is kept
}

type groupReport struct {
	Group           string           `json:"group"`
	GroupProtocol   string           `json:"groupProtocol"`
	ProtocolType    string           `json:"protocolType"`
	Generations     []generation     `json:"generations"`
	ConsumerMembers []consumerMember `json:"consumerMembers"`
	Storms          []struct {
		Rebalances int `json:"rebalances"`
	} `json:"storms"`
	Share      *shareReport `json:"share"`
	Migrations []migration  `json:"migrations"`
}

// shareReport is a share group's records (KIP-932).
type shareReport struct {
	Totals  shareCounts `json:"totals"`
	Members []struct {
		MemberID string `json:"memberId"`
		shareCounts
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			shareCounts
		} `json:"partitions"`
	} `json:"members"`
	Redeliveries []struct {
		Topic         string  `json:"topic"`
		Partition     int32   `json:"partition"`
		Offsets       string  `json:"offsets"`
		Records       int64   `json:"records"`
		DeliveryCount int16   `json:"deliveryCount"`
		MemberID      string  `json:"memberId"`
		From          string  `json:"from"`
		How           string  `json:"how"`
		DepartedAt    *string `json:"departedAt"`
	} `json:"redeliveries"`
	RedeliveriesDropped int `json:"redeliveriesDropped"`
}

type shareCounts struct {
	Acquired          int64 `json:"acquired"`
	Redelivered       int64 `json:"redelivered"`
	Accepted          int64 `json:"accepted"`
	Released          int64 `json:"released"`
	Rejected          int64 `json:"rejected"`
	AcknowledgeFailed int64 `json:"acknowledgeFailed"`
	Unacknowledged    int64 `json:"unacknowledged"`
}

// migration is an online migration between the classic and the consumer
// protocol.
type migration struct {
	Direction   string     `json:"direction"`
	StartedAt   time.Time  `json:"startedAt"`
	StartedBy   string     `json:"startedBy"`
	ConvertedAt *time.Time `json:"convertedAt"`
	Generation  *int32     `json:"generation"`
	ConvertedBy string     `json:"convertedBy"`
	CompletedAt *time.Time `json:"completedAt"`
	LastMember  string     `json:"lastMember"`
}

type generation struct {
	Generation              int32       `json:"generation"`
	Status                  string      `json:"status"`
	ProtocolType            string      `json:"protocolType"`
	Protocol                string      `json:"protocol"`
	Mode                    string      `json:"mode"`
	Leader                  string      `json:"leader"`
	Trigger                 trigger     `json:"trigger"`
	StartedAt               time.Time   `json:"startedAt"`
	StableAt                time.Time   `json:"stableAt"`
	StopTheWorldMs          *float64    `json:"stopTheWorldMs"`
	WaitedFor               string      `json:"waitedFor"`
	Members                 []member    `json:"members"`
	Departed                []departure `json:"departed"`
	RejoinsWithoutRebalance []rejoin    `json:"rejoinsWithoutRebalance"`
	CommitsDuringRevocation []revCommit `json:"commitsDuringRevocation"`
	FollowUpOf              *int32      `json:"followUpOf"`
	Unsettled               string      `json:"unsettled"`
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
	Status       string             `json:"status"`
	JoinedAt     time.Time          `json:"joinedAt"`
	Subscription []string           `json:"subscription"`
	Assignment   map[string][]int32 `json:"assignment"`
	Added        map[string][]int32 `json:"added"`
	Revoked      map[string][]int32 `json:"revoked"`
	Protocol     string             `json:"protocol"`
}

type departure struct {
	MemberID   string             `json:"memberId"`
	InstanceID string             `json:"instanceId"`
	How        string             `json:"how"`
	Reason     string             `json:"reason"`
	Partitions map[string][]int32 `json:"partitions"`
}

type rejoin struct {
	MemberID   string `json:"memberId"`
	InstanceID string `json:"instanceId"`
	Replaces   string `json:"replaces"`
	ClientID   string `json:"clientId"`
}

type revCommit struct {
	MemberID   string                       `json:"memberId"`
	At         time.Time                    `json:"at"`
	Generation int32                        `json:"generation"`
	Offsets    map[string]map[string]int64  `json:"offsets"`
	Errors     map[string]map[string]string `json:"errors"`
	Result     string                       `json:"result"`
	Failed     bool                         `json:"failed"`
	// Transaction is set for a TxnOffsetCommit.
	Transaction *struct {
		TransactionalID string     `json:"transactionalId"`
		ProducerID      int64      `json:"producerId"`
		ProducerEpoch   int16      `json:"producerEpoch"`
		Outcome         string     `json:"outcome"`
		EndedAt         *time.Time `json:"endedAt"`
	} `json:"transaction"`
}

// consumerMember is a KIP-848 member and its epoch history.
type consumerMember struct {
	MemberID     string             `json:"memberId"`
	ClientID     string             `json:"clientId"`
	Subscription []string           `json:"subscription"`
	Active       bool               `json:"active"`
	MemberEpoch  *int32             `json:"memberEpoch"`
	Assignment   map[string][]int32 `json:"assignment"`
	Epochs       []epoch            `json:"epochs"`
	Protocol     string             `json:"protocol"`
}

type epoch struct {
	At         time.Time          `json:"at"`
	Epoch      int32              `json:"epoch"`
	Assignment map[string][]int32 `json:"assignment"`
	Added      map[string][]int32 `json:"added"`
	Revoked    map[string][]int32 `json:"revoked"`
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

// deref shows a nullable number: its value, or "null".
func deref(p *int32) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// consumerMember returns the KIP-848 member with that client id, failing the
// test without one.
func (g *groupReport) consumerMember(t *testing.T, clientID string) *consumerMember {
	t.Helper()
	for i := range g.ConsumerMembers {
		if g.ConsumerMembers[i].ClientID == clientID {
			return &g.ConsumerMembers[i]
		}
	}
	t.Fatalf("group %s: no KIP-848 member with client id %s among %d", g.Group, clientID, len(g.ConsumerMembers))
	return nil
}

// epochWhere is the index of the member's first epoch entry that matches, or -1.
func (m *consumerMember) epochWhere(match func(epoch) bool) int {
	for i, e := range m.Epochs {
		if match(e) {
			return i
		}
	}
	return -1
}

// summary is one line per epoch entry, for failure messages.
func (m *consumerMember) summary() string {
	var b strings.Builder
	for _, e := range m.Epochs {
		fmt.Fprintf(&b, "  epoch %d assignment %v added %v revoked %v\n", e.Epoch, e.Assignment, e.Added, e.Revoked)
	}
	return b.String()
}

// summaryOrNone is summary on one line, or says the member is not in the
// timeline.
func (m *consumerMember) summaryOrNone() string {
	if m == nil {
		return "not in the timeline"
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(m.summary(), "\n", ";")), " ")
}

// checkOwnedInEpochs checks a Java consumer's own view of its assignment
// against the KIP-848 story: what it owned after each assignment callback
// from after until before (client clock, Unix ms; before 0: no end) is
// one of its member's epochs.
func checkOwnedInEpochs(t *testing.T, g *groupReport, clientID string, p *proc, after, before int64) {
	t.Helper()
	cm := g.consumerMember(t, clientID)
	p.mu.Lock()
	evs := append([]event(nil), p.events...)
	p.mu.Unlock()
	checked := 0
	for _, e := range evs {
		if e.Name != "assigned" || e.MS < after || (before > 0 && e.MS >= before) {
			continue
		}
		checked++
		found := false
		for _, ep := range cm.Epochs {
			if slices.Equal(all(ep.Assignment), all(e.Owned)) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s owned %v after its assignment at %s, which is none of its epochs:\n%s",
				clientID, all(e.Owned), time.UnixMilli(e.MS).UTC().Format("15:04:05.000"), cm.summary())
		}
	}
	if checked == 0 {
		t.Errorf("%s printed no assignment to check", clientID)
	}
}
