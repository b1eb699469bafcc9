package timeline

// Kafka Streams on the classic protocol: a consumer group whose assignor
// is "stream". Its members' SubscriptionInfo and AssignmentInfo (see
// decode/streams_userdata.go) say which tasks each instance had and got;
// the report shows them per generation next to the partitions, and a
// rejoin the assignment scheduled (KIP-441 probing) is its own trigger.

import (
	"strconv"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// probingPrefix begins the JoinGroup reason of a Streams member rejoining
// for a follow-up its assignment scheduled (StreamThread, "triggered
// followup rebalance scheduled for <ms>").
const probingPrefix = "triggered followup rebalance scheduled for "

// ClassicStreamsReport is a classic Kafka Streams member's SubscriptionInfo
// and AssignmentInfo in one generation.
type ClassicStreamsReport struct {
	ProcessID              string `json:"processId"`              // the Kafka Streams instance (process UUID); "" unknown
	UserEndpoint           string `json:"userEndpoint"`           // application.server, "host:port"; "" none
	SubscriptionVersion    *int32 `json:"subscriptionVersion"`    // SubscriptionInfo version; null unknown
	LatestSupportedVersion *int32 `json:"latestSupportedVersion"` // the newest it can read (v3+); null unknown
	// TaskOffsetSums (SubscriptionInfo v7+) is the tasks it had state for
	// when joining, task to the sum of its changelog offsets (-2: an
	// active task it was running); null unknown or before v7.
	TaskOffsetSums map[string]int64 `json:"taskOffsetSums"`
	PrevActive     []string         `json:"prevActive"`  // SubscriptionInfo before v7: the active tasks it ran; null otherwise
	PrevStandby    []string         `json:"prevStandby"` // SubscriptionInfo before v7: its standby tasks; null otherwise
	// SubscriptionError is the SubscriptionInfo error code (v9+; e.g. 1
	// shutdown requested), 0 none.
	SubscriptionError int32 `json:"subscriptionError"`
	// AssignmentVersion is the AssignmentInfo version; null: its
	// assignment's userdata was not seen.
	AssignmentVersion *int32   `json:"assignmentVersion"`
	Active            []string `json:"active"`          // the active tasks it got, sorted; null unknown
	Standby           []string `json:"standby"`         // the standby (and KIP-441 warm-up) tasks it got, sorted; null unknown
	ActiveGained      []string `json:"activeGained"`    // active tasks it did not have in the previous generation; null unknown
	ActiveLost        []string `json:"activeLost"`      // active tasks it had in the previous generation and no longer has; null unknown
	AssignmentError   int32    `json:"assignmentError"` // the AssignmentInfo error code (v4+), 0 none
	// NextRebalanceAt is the follow-up rebalance the assignment scheduled
	// (v7+): a KIP-441 probing rebalance while warm-up tasks catch up, or,
	// when a task moves, at once (the time of the assignment); null none.
	NextRebalanceAt *string `json:"nextRebalanceAt"`
}

// streamsAssigned is the member's AssignmentInfo: its own SyncGroup
// response, else the leader's plan, else nil.
func (m *member) streamsAssigned() *decode.StreamsAssignmentInfo {
	if m.more().streamsAsg != nil {
		return m.more().streamsAsg
	}
	return m.more().streamsPlan
}

// classicTask is a decoded task id as a task.
func classicTask(id decode.StreamsTaskID) task {
	sub := strconv.Itoa(int(id.Subtopology))
	if id.Topology != "" {
		sub = id.Topology + "__" + sub
	}
	return task{sub: sub, part: id.Partition}
}

// classicTasks is ids as a sorted set.
func classicTasks(ids []decode.StreamsTaskID) []task {
	ts := make([]decode.StreamsTasks, 0, len(ids))
	for _, id := range ids {
		t := classicTask(id)
		ts = append(ts, decode.StreamsTasks{Subtopology: t.sub, Partitions: []int32{t.part}})
	}
	return tasksOf(ts)
}

// probingJoin reports whether m's JoinGroup is the follow-up its
// assignment in the previous generation, pm, scheduled for a later time:
// its reason says so, or it came once that time had passed. A follow-up
// scheduled at once is the revocation half of a task moving, a
// cooperative follow-up.
func probingJoin(pm, m *member) bool {
	if ms, ok := strings.CutPrefix(m.reason, probingPrefix); ok {
		n, err := strconv.ParseInt(strings.TrimSpace(ms), 10, 64)
		return err == nil && n > 0
	}
	a := pm.streamsAssigned()
	if a == nil || a.NextRebalanceMs <= 0 || a.NextRebalanceMs == decode.StreamsNoRebalance || m.reason != "" {
		return false
	}
	return !m.joinAt().Before(time.UnixMilli(a.NextRebalanceMs))
}

// followUpJoin reports whether m's JoinGroup is the follow-up its
// assignment in the previous generation, pm, scheduled at once: a task
// moving between instances is revoked from its old owner first, and the
// leader schedules the follow-up that hands it over (the cooperative
// follow-up) in the new owner's assignment (e2e 53, Kafka Streams 3.9 and
// 4.4). The old owner rejoins for its revocation and the new one for the
// schedule, whichever first: the new owner's rejoin, which revoked
// nothing, is the follow-up too.
func followUpJoin(pm, m *member) bool {
	if m.reason == probingPrefix+"0" {
		return true
	}
	a := pm.streamsAssigned()
	return m.reason == "" && a != nil && a.Version >= 7 && a.NextRebalanceMs == 0
}

// classicStreamsReport is m's Streams userdata in gen, nil when it has
// none.
func classicStreamsReport(gen *generation, m *member) *ClassicStreamsReport {
	sub, asg := m.more().streamsSub, m.streamsAssigned()
	if sub == nil && asg == nil {
		return nil
	}
	r := &ClassicStreamsReport{}
	if sub != nil {
		v, l := sub.Version, sub.LatestSupportedVersion
		r.ProcessID, r.UserEndpoint, r.SubscriptionError = sub.ProcessID, sub.UserEndpoint, sub.ErrorCode
		r.SubscriptionVersion = &v
		if l >= 0 {
			r.LatestSupportedVersion = &l
		}
		if sub.Version >= 7 {
			r.TaskOffsetSums = map[string]int64{}
			for _, o := range sub.TaskOffsetSums {
				r.TaskOffsetSums[classicTask(o.Task).String()] = o.OffsetSum
			}
		} else {
			r.PrevActive = taskStrings(classicTasks(sub.PrevActive))
			r.PrevStandby = taskStrings(classicTasks(sub.PrevStandby))
		}
	}
	if asg == nil {
		return r
	}
	v := asg.Version
	r.AssignmentVersion, r.AssignmentError = &v, asg.ErrorCode
	active := classicTasks(asg.Active)
	r.Active, r.Standby = taskStrings(active), taskStrings(classicTasks(asg.Standby))
	if next := asg.NextRebalanceMs; next != decode.StreamsNoRebalance && asg.Version >= 7 {
		at := time.UnixMilli(next)
		if next == 0 {
			at = m.syncedAt()
		}
		r.NextRebalanceAt = stampPtr(at)
	}
	if gen.midway {
		return r
	}
	var before []task
	if pm := previousRecord(gen, m); pm != nil {
		pa := pm.streamsAssigned()
		if pa == nil {
			return r
		}
		before = classicTasks(pa.Active)
	} else if m.status != statusJoined {
		return r
	}
	r.ActiveGained = taskStrings(taskMinus(active, before))
	r.ActiveLost = taskStrings(taskMinus(before, active))
	return r
}

// previousRecord is m's record in the generation before gen (a static
// member's under the id it replaced), nil if none.
func previousRecord(gen *generation, m *member) *member {
	if gen.prev == nil {
		return nil
	}
	if pm := gen.prev.members[m.id]; pm != nil {
		return pm
	}
	if m.more().replaces != "" {
		return gen.prev.members[m.more().replaces]
	}
	return nil
}

// classicStreamsText is a member's tasks for the text timeline:
// " tasks active 0_0 0_1 (+0_1 -0_2) standby 1_0", or "".
func classicStreamsText(s *ClassicStreamsReport, loc *time.Location) string {
	if s == nil || s.Active == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(" tasks active " + strList(s.Active))
	var moved []string
	for _, t := range s.ActiveGained {
		moved = append(moved, "+"+t)
	}
	for _, t := range s.ActiveLost {
		moved = append(moved, "-"+t)
	}
	if len(moved) > 0 {
		b.WriteString(" (" + strings.Join(moved, " ") + ")")
	}
	if len(s.Standby) > 0 {
		b.WriteString(" standby " + strList(s.Standby))
	}
	if s.NextRebalanceAt != nil {
		b.WriteString(", follow-up rebalance at " + clockOf(s.NextRebalanceAt, loc))
	}
	return b.String()
}

func strList(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}
