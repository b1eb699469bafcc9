package timeline

import (
	"cmp"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// StreamsReport is a streams group's story (KIP-1071): its epochs with
// the tasks each moved, its members with their tasks over time, the
// statuses the coordinator raised and the warm-ups it ran.
type StreamsReport struct {
	GroupEpoch int32 `json:"groupEpoch"` // the highest group epoch seen (member epochs, describes)
	// AssignmentEpoch and State are the last StreamsGroupDescribe's
	// answer; null and "" when none was seen.
	AssignmentEpoch *int32 `json:"assignmentEpoch"`
	State           string `json:"state"`
	Assignor        string `json:"assignor"` // the task assignor a describe named (v1+); "" unknown
	// TopologyEpoch is the epoch of the topology members joined with (or a
	// describe named); null unknown.
	TopologyEpoch *int32                     `json:"topologyEpoch"`
	Subtopologies []StreamsSubtopologyReport `json:"subtopologies"` // sorted by id
	// AcceptableRecoveryLagRecords is the changelog lag under which a
	// warm-up counts as caught up, as heartbeat responses said; null
	// unknown.
	AcceptableRecoveryLagRecords *int64                `json:"acceptableRecoveryLag"`
	Members                      []StreamsMemberReport `json:"members"` // sorted by member id
	Epochs                       []StreamsEpochReport  `json:"epochs"`  // in order; the last 200
	EpochsDropped                int                   `json:"epochsDropped"`
	Statuses                     []StreamsStatusReport `json:"statuses"` // in the order raised
	Warmups                      []StreamsWarmupReport `json:"warmups"`  // in the order assigned
	// RecordsDropped counts statuses and warm-ups beyond the first 500,
	// not kept.
	RecordsDropped int `json:"recordsDropped"`
	// UnassignedTasks are tasks that were active on a member and are
	// active on no live member at the end of the input.
	UnassignedTasks []string `json:"unassignedTasks"`
}

// StreamsSubtopologyReport is one subtopology and its topics.
type StreamsSubtopologyReport struct {
	ID                      string   `json:"id"`
	SourceTopics            []string `json:"sourceTopics"`
	SourceTopicRegex        []string `json:"sourceTopicRegex"`
	RepartitionSourceTopics []string `json:"repartitionSourceTopics"`
	RepartitionSinkTopics   []string `json:"repartitionSinkTopics"`
	StateChangelogTopics    []string `json:"stateChangelogTopics"`
}

// StreamsTasksReport is a set of tasks by kind, each "subtopology_partition".
type StreamsTasksReport struct {
	Active  []string `json:"active"`
	Standby []string `json:"standby"`
	Warmup  []string `json:"warmup"`
}

// StreamsMemberReport is one member of a streams group.
type StreamsMemberReport struct {
	MemberID      string  `json:"memberId"`
	InstanceID    string  `json:"instanceId"`    // "" for dynamic members
	ProcessID     string  `json:"processId"`     // the Kafka Streams instance; "" unknown
	UserEndpoint  string  `json:"userEndpoint"`  // application.server, "host:port"; "" none
	ClientID      string  `json:"clientId"`      // from the request headers
	ClientAddr    string  `json:"clientAddr"`    // the client's address
	Rack          string  `json:"rack"`          // "" none
	MemberEpoch   int32   `json:"memberEpoch"`   // the last epoch the coordinator gave it
	TopologyEpoch int32   `json:"topologyEpoch"` // the topology epoch it joined with
	JoinedAt      *string `json:"joinedAt"`      // its last join; null unseen
	// Status is "active", "left" or the error that fenced it
	// ("FENCED_MEMBER_EPOCH", ...).
	Status string  `json:"status"`
	LeftAt *string `json:"leftAt"` // when it left or was fenced; null while active
	// Tasks are what it holds at the end of the input (nothing once gone);
	// Target is the target assignment the last describe gave it (null
	// when none was seen).
	Tasks  StreamsTasksReport  `json:"tasks"`
	Target *StreamsTasksReport `json:"target"`
	// Lane is its tasks over time: each step holds from At until the
	// next step (or LeftAt); the last 200.
	Lane   []StreamsStepReport `json:"lane"`
	Fences []FenceReport       `json:"fences"`
}

// StreamsStepReport is a member's tasks from one response on.
type StreamsStepReport struct {
	At    string `json:"at"`
	Epoch int32  `json:"epoch"` // the member epoch
	StreamsTasksReport
}

// StreamsEpochReport is one group epoch and the tasks it moved.
type StreamsEpochReport struct {
	Epoch   int32         `json:"epoch"`
	At      string        `json:"at"`      // the first response naming it
	Trigger TriggerReport `json:"trigger"` // member_joined, member_rejoined, member_left, member_fenced, topology_changed or unknown
	Moves   []TaskMove    `json:"moves"`   // in the order the members got the tasks
	// ReconciledAt is when every live member had reached the epoch, and
	// ReconcileMs how long after At; null while some had not (or a later
	// epoch began first).
	ReconciledAt *string  `json:"reconciledAt"`
	ReconcileMs  *float64 `json:"reconcileMs"`
}

// TaskMove is one task a member got in an epoch.
type TaskMove struct {
	At   string `json:"at"`
	Task string `json:"task"` // "subtopology_partition"
	Kind string `json:"kind"` // "active", "standby" or "warmup"
	To   string `json:"to"`   // the member that got it
	// From is the member that last held it active ("" none): an active
	// task moved from From to To.
	From string `json:"from"`
	// Promoted is "warmup" or "standby" when To held the task as such
	// before it became active; "" otherwise.
	Promoted string `json:"promoted"`
}

// StreamsStatusReport is one status the coordinator raised.
type StreamsStatusReport struct {
	Code      int8    `json:"code"`
	Name      string  `json:"name"` // STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED, MISSING_CLIENT_TAGS
	Detail    string  `json:"detail"`
	MemberID  string  `json:"memberId"` // the member whose response first raised it
	RaisedAt  string  `json:"raisedAt"`
	ClearedAt *string `json:"clearedAt"` // null while raised at the end of the input
}

// StreamsWarmupReport is one warm-up task on one member.
type StreamsWarmupReport struct {
	Task       string   `json:"task"`
	MemberID   string   `json:"memberId"`
	AssignedAt string   `json:"assignedAt"`
	PromotedAt *string  `json:"promotedAt"` // when the member got it active; null if never
	EndedAt    *string  `json:"endedAt"`    // when it was taken away unpromoted (or the member left); null if promoted or still running
	WarmingMs  *float64 `json:"warmingMs"`  // from AssignedAt to its promotion, its end, or the end of the input
	// Lag is its changelog lag (end offset minus offset) as the member
	// last reported it; null unknown.
	Lag *int64 `json:"lag"`
}

// streamsReport renders a streams group.
func (g *group) streamsReport(end time.Time) *StreamsReport {
	st := g.streams
	r := &StreamsReport{GroupEpoch: st.epoch, State: st.state, Assignor: st.assignor, EpochsDropped: st.epochsDropped,
		RecordsDropped: st.dropped, Subtopologies: []StreamsSubtopologyReport{}, Members: []StreamsMemberReport{},
		Epochs: []StreamsEpochReport{}, Statuses: []StreamsStatusReport{}, Warmups: []StreamsWarmupReport{},
		UnassignedTasks: taskStrings(st.unassigned())}
	if st.described {
		a := st.assignmentEpoch
		r.AssignmentEpoch = &a
	}
	if st.recoveryLag >= 0 {
		l := st.recoveryLag
		r.AcceptableRecoveryLagRecords = &l
	}
	if t := st.topology; t != nil {
		e := t.Epoch
		r.TopologyEpoch = &e
		for _, s := range t.Subtopologies {
			r.Subtopologies = append(r.Subtopologies, StreamsSubtopologyReport{ID: s.ID, SourceTopics: strs(s.SourceTopics),
				SourceTopicRegex: strs(s.SourceTopicRegex), RepartitionSourceTopics: strs(s.RepartitionSourceTopics),
				RepartitionSinkTopics: strs(s.RepartitionSinkTopics), StateChangelogTopics: strs(s.StateChangelogTopics)})
		}
	}
	for _, id := range sortedKeys(st.members) {
		m := st.members[id]
		mr := StreamsMemberReport{MemberID: id, InstanceID: m.instanceID, ProcessID: m.processID, UserEndpoint: m.endpoint,
			ClientID: m.clientID, ClientAddr: m.clientAddr, Rack: m.rack, MemberEpoch: m.epoch, TopologyEpoch: m.topologyEpoch,
			JoinedAt: stampPtr(m.joinedAt), LeftAt: stampPtr(m.leftAt), Status: "active",
			Tasks: tasksReport(m.active, m.standby, m.warmup), Lane: []StreamsStepReport{}, Fences: []FenceReport{}}
		if !m.alive {
			mr.Status = cmp.Or(m.how, "unknown")
		}
		if m.target != nil {
			t := tasksReport(tasksOf(m.target.Active), tasksOf(m.target.Standby), tasksOf(m.target.Warmup))
			mr.Target = &t
		}
		for _, s := range m.steps {
			mr.Lane = append(mr.Lane, StreamsStepReport{At: stamp(s.at), Epoch: s.epoch, StreamsTasksReport: tasksReport(s.active, s.standby, s.warmup)})
		}
		for _, f := range m.fences {
			mr.Fences = append(mr.Fences, FenceReport{At: stamp(f.at), Epoch: f.epoch, Error: f.err})
		}
		r.Members = append(r.Members, mr)
	}
	for _, e := range st.epochs {
		er := StreamsEpochReport{Epoch: e.epoch, At: stamp(e.at), Trigger: triggerReport(e.trigger), Moves: []TaskMove{},
			ReconciledAt: stampPtr(e.reconciledAt), ReconcileMs: msPtr(e.reconciledAt.Sub(e.at), !e.reconciledAt.IsZero())}
		for _, mv := range e.moves {
			er.Moves = append(er.Moves, TaskMove{At: stamp(mv.at), Task: mv.task.String(), Kind: mv.kind, To: mv.to, From: mv.from, Promoted: mv.promoted})
		}
		r.Epochs = append(r.Epochs, er)
	}
	for _, s := range st.statuses {
		r.Statuses = append(r.Statuses, StreamsStatusReport{Code: s.code, Name: decode.StreamsStatusName(s.code), Detail: s.detail,
			MemberID: s.member, RaisedAt: stamp(s.raised), ClearedAt: stampPtr(s.clearedAt)})
	}
	for _, w := range st.warmups {
		wr := StreamsWarmupReport{Task: w.task.String(), MemberID: w.member, AssignedAt: stamp(w.at),
			PromotedAt: stampPtr(w.promotedAt), EndedAt: stampPtr(w.endAt)}
		until := end
		switch {
		case !w.promotedAt.IsZero():
			until = w.promotedAt
		case !w.endAt.IsZero():
			until = w.endAt
		}
		wr.WarmingMs = msPtr(until.Sub(w.at), !until.IsZero() && !until.Before(w.at))
		if w.lag >= 0 {
			l := w.lag
			wr.Lag = &l
		}
		r.Warmups = append(r.Warmups, wr)
	}
	return r
}

func tasksReport(active, standby, warmup []task) StreamsTasksReport {
	return StreamsTasksReport{Active: taskStrings(active), Standby: taskStrings(standby), Warmup: taskStrings(warmup)}
}

// strs is s, empty rather than nil.
func strs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
