package timeline

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// KIP-1071 streams groups. A Kafka Streams application with
// group.protocol=streams joins a streams group with StreamsGroupHeartbeat:
// like KIP-848, a group epoch bumped by joins, leaves and topology
// changes, a member epoch per member, and an assignment computed by the
// coordinator that each member reconciles on its own (revoke, then
// receive). What is assigned is tasks, not partitions: a task is a
// subtopology and a partition of its input topics ("0_1"), held active
// (processing), standby (a replica of its state) or warm-up (a standby
// catching up before it takes the task over: promoted to active once its
// changelog lag is under the acceptable recovery lag).
//
// The engine keeps a streams group apart from its generations: each group
// epoch is one record with the task movements it brought (what moved,
// from whom, warm-ups promoted), each member a lane of its task sets over
// time. StreamsGroupDescribe adds the group and assignment epochs, the
// state and each member's target assignment.

// Kinds of the streams-group entries.
const (
	// KindStreamsEpoch: a streams group reached a new group epoch.
	KindStreamsEpoch Kind = "streams_epoch"
	// KindTasks: a streams member's tasks changed: what it got (from
	// whom, warm-ups promoted) and what it gave up.
	KindTasks Kind = "tasks"
	// KindStreamsStatus: the coordinator raised or cleared a status that
	// keeps the group from running as it is (missing source topics, a
	// stale topology, ...).
	KindStreamsStatus Kind = "streams_status"
	// KindTasksUnassigned: tasks that were active are on no live member
	// at the end of the input.
	KindTasksUnassigned Kind = "tasks_unassigned"
)

func init() {
	subKinds[KindTasks] = true
	subKinds[KindStreamsStatus] = true
}

const (
	// maxStreamsEpochs bounds the epochs a streams group keeps; the
	// entries tell them all.
	maxStreamsEpochs = 200
	// maxStreamsSteps bounds each member's lane.
	maxStreamsSteps = 200
	// maxStreamsRecords bounds the warm-ups and status episodes kept.
	maxStreamsRecords = 500
)

// TriggerTopologyChanged: a streams member joined with a topology of a
// higher epoch than the group's.
const TriggerTopologyChanged = "topology_changed"

// streamsState is a streams group's story.
type streamsState struct {
	epoch int32 // the highest group epoch seen
	// memberEpoch is the highest member epoch a heartbeat response gave:
	// a joining member gets at least it, unless the group was re-created
	// (recreatedBy). A describe's group epoch may be above it while the
	// assignment lags.
	memberEpoch     int32
	assignmentEpoch int32 // the last describe's
	described       bool
	state, assignor string
	topology        *decode.StreamsTopology
	recoveryLag     int64 // -1 unknown
	members         map[string]*smember
	epochs          []*streamsEpoch
	epochsDropped   int
	// lastActive is, per task, the member that last held it active: the
	// one it moves from.
	lastActive map[task]string
	causes     []trigger // what may have bumped the next epoch
	statuses   []*streamsStatus
	open       map[int8]*streamsStatus // raised, not yet cleared
	warmups    []*warmupRecord
	dropped    int // warm-ups and statuses not kept beyond maxStreamsRecords
}

// smember is one streams group member.
type smember struct {
	id, instanceID, processID, endpoint, clientID, clientAddr, rack string
	epoch, topologyEpoch                                            int32
	active, standby, warmup                                         []task // nil before the first assignment
	target                                                          *decode.StreamsAssignment
	joinedAt, lastAt, leftAt                                        time.Time
	alive                                                           bool
	how                                                             string // "left" or the fencing error, once gone
	interval                                                        time.Duration
	steps                                                           []streamsStep
	fences                                                          []fence
	warming                                                         map[task]*warmupRecord
	offsets, ends                                                   map[task]int64
}

// streamsStep is a member's task sets from one response on.
type streamsStep struct {
	at                      time.Time
	epoch                   int32
	active, standby, warmup []task
}

// streamsEpoch is one group epoch and the task movements it brought.
type streamsEpoch struct {
	epoch   int32
	at      time.Time
	trigger trigger
	moves   []taskMove
	// reconciledAt is when every live member reached the epoch; zero
	// until then.
	reconciledAt time.Time
}

// taskMove is one task a member got.
type taskMove struct {
	at       time.Time
	task     task
	kind     string // taskActive, taskStandby, taskWarmup
	from, to string // from: the member that last held it active; "" none
	promoted string // the kind the receiver held it as before (a promoted warm-up or standby); ""
}

// streamsStatus is one status the coordinator raised, until cleared.
type streamsStatus struct {
	code               int8
	detail, member     string
	raised, clearedAt  time.Time
	raisedEpoch, clear int32
}

// warmupRecord is one warm-up task on one member.
type warmupRecord struct {
	task                  task
	member                string
	at, promotedAt, endAt time.Time
	lag                   int64 // the last changelog lag seen; -1 unknown
}

func (g *group) streamsState() *streamsState {
	if g.streams == nil {
		g.streams = &streamsState{members: map[string]*smember{}, lastActive: map[task]string{},
			open: map[int8]*streamsStatus{}, recoveryLag: -1}
		g.protocolType = "streams"
	}
	return g.streams
}

func (st *streamsState) member(id string, ev *decode.Event) *smember {
	m := st.members[id]
	if m == nil {
		m = &smember{id: id, warming: map[task]*warmupRecord{}}
		st.members[id] = m
	}
	if ev.ClientID != "" {
		m.clientID = ev.ClientID
	}
	if ev.ClientAddr != "" {
		m.clientAddr = ev.ClientAddr
	}
	return m
}

// streamsHeartbeat handles a StreamsGroupHeartbeat exchange.
func (g *group) streamsHeartbeat(ev *decode.Event) {
	h := ev.StreamsGroupHeartbeat
	st := g.streamsState()
	id := cmp.Or(h.AssignedMemberID, h.MemberID)
	if id == "" {
		return
	}
	m := st.member(id, ev)
	if h.InstanceID != nil {
		m.instanceID = *h.InstanceID
	}
	if h.RackID != nil {
		m.rack = *h.RackID
	}
	if h.ProcessID != nil {
		m.processID = *h.ProcessID
	}
	if h.UserEndpoint != nil {
		m.endpoint = *h.UserEndpoint
	}
	if h.TaskOffsets != nil {
		m.offsets = offsetMap(h.TaskOffsets)
	}
	if h.TaskEndOffsets != nil {
		m.ends = offsetMap(h.TaskEndOffsets)
	}
	m.updateLags()
	if t := h.Topology; t != nil {
		if st.topology != nil && t.Epoch > st.topology.Epoch {
			st.causes = append(st.causes, trigger{kind: TriggerTopologyChanged, member: id, at: ev.At,
				reason: fmt.Sprintf("topology epoch %d → %d", st.topology.Epoch, t.Epoch)})
		}
		if st.topology == nil || t.Epoch >= st.topology.Epoch {
			st.topology = t
		}
		m.topologyEpoch = t.Epoch
	}
	if h.MemberEpoch < 0 {
		g.streamsLeave(ev, m)
		return
	}
	if h.MemberEpoch == 0 && !m.alive {
		kind := TriggerMemberJoined
		if !m.joinedAt.IsZero() {
			kind = TriggerMemberRejoined
		}
		st.causes = append(st.causes, trigger{kind: kind, member: id, at: ev.At})
	}
	if !ev.Responded() {
		return
	}
	if h.ErrorCode != 0 {
		g.streamsError(ev, m)
		return
	}
	if h.AcceptableRecoveryLag >= 0 {
		st.recoveryLag = h.AcceptableRecoveryLag
	}
	if h.HeartbeatInterval > 0 {
		m.interval = h.HeartbeatInterval
	}
	if h.MemberEpoch == 0 && !m.alive {
		m.joinedAt, m.leftAt, m.how = ev.At, time.Time{}, ""
		m.active, m.standby, m.warmup = nil, nil, nil
		g.emit(ev.At, KindMemberJoined, h.AssignedEpoch, id, fmt.Sprintf("%s joined the streams group (process %s, endpoint %s, topology epoch %d)",
			id, cmp.Or(m.processID, "unknown"), cmp.Or(m.endpoint, "none"), m.topologyEpoch),
			map[string]any{"process_id": m.processID, "endpoint": m.endpoint, "topology_epoch": m.topologyEpoch, "client_id": m.clientID})
	}
	m.alive, m.lastAt = true, ev.At
	st.memberEpoch = max(st.memberEpoch, h.AssignedEpoch)
	if h.AssignedEpoch > st.epoch {
		g.streamsEpoch(h.AssignedEpoch, ev.RespondedAt)
	}
	g.streamsStatuses(ev, m)
	g.streamsStep(ev, m)
	g.streamsReconciled(ev.RespondedAt)
}

// streamsReconciled tells the group epoch reconciled once every live
// member has reached it: the streams form of a stable generation (no
// stop-the-world; the reconciliation time is from the epoch's first
// response).
func (g *group) streamsReconciled(at time.Time) {
	st := g.streams
	if len(st.epochs) == 0 {
		return
	}
	e := st.epochs[len(st.epochs)-1]
	if e.epoch != st.epoch || !e.reconciledAt.IsZero() {
		return
	}
	n := 0
	for _, m := range st.members {
		if !m.alive {
			continue
		}
		if m.epoch != st.epoch {
			return
		}
		n++
	}
	if n == 0 {
		return
	}
	e.reconciledAt = at
	g.e.emit(Entry{At: at, Group: g.id, Kind: KindStable, Generation: e.epoch,
		Text: fmt.Sprintf("streams group epoch %d reconciled %s: %s, no stop-the-world (%s)", e.epoch, after(at.Sub(e.at)), members(n), e.trigger.kind),
		Fields: map[string]any{"reconcile_ms": float64(at.Sub(e.at)) / float64(time.Millisecond), "stop_the_world_ms": 0.0,
			"trigger": e.trigger.kind, "members": n},
		Stable: &StableFacts{Trigger: e.trigger.kind, Members: n}})
}

// after is "after d", or "at once" for no time.
func after(d time.Duration) string {
	if d <= 0 {
		return "at once"
	}
	return "after " + human(d)
}

// members is "1 member" or "n members".
func members(n int) string {
	if n == 1 {
		return "1 member"
	}
	return strconv.Itoa(n) + " members"
}

// streamsEmptied tells the group empty once its last live member is gone.
func (g *group) streamsEmptied(at time.Time, last *smember) {
	for _, m := range g.streams.members {
		if m.alive {
			return
		}
	}
	g.emit(at, KindGroupEmpty, g.streams.epoch, last.id, fmt.Sprintf("streams group empty: its last member %s is gone (%s)", last.id, last.how),
		map[string]any{"member_epoch": last.epoch})
}

func offsetMap(os []decode.StreamsTaskOffset) map[task]int64 {
	out := make(map[task]int64, len(os))
	for _, o := range os {
		out[task{o.Subtopology, o.Partition}] = o.Offset
	}
	return out
}

// updateLags records the changelog lag of the member's warm-ups.
func (m *smember) updateLags() {
	for t, w := range m.warming {
		end, okEnd := m.ends[t]
		off, okOff := m.offsets[t]
		if okEnd && okOff {
			w.lag = max(end-off, 0)
		}
	}
}

// streamsEpoch records a new group epoch, with the causes seen since the
// last one.
func (g *group) streamsEpoch(epoch int32, at time.Time) {
	st := g.streams
	old := st.epoch
	st.epoch = epoch
	e := &streamsEpoch{epoch: epoch, at: at, trigger: trigger{kind: TriggerUnknown}}
	if len(st.causes) > 0 {
		e.trigger = st.causes[0]
	} else if m := st.silent(at); m != nil {
		// No cause seen: a member that stopped heartbeating was removed
		// by the coordinator when its session timed out.
		e.trigger = trigger{kind: TriggerSessionTimeout, member: m.id, at: at,
			reason: fmt.Sprintf("inferred: silent for %s, heartbeat interval %s", human(at.Sub(m.lastAt)), human(m.interval))}
	}
	st.causes = nil
	if len(st.epochs) >= maxStreamsEpochs {
		st.epochs = st.epochs[1:]
		st.epochsDropped++
	}
	st.epochs = append(st.epochs, e)
	text := fmt.Sprintf("streams group epoch %d", epoch)
	if old > 0 {
		text = fmt.Sprintf("streams group epoch %d → %d", old, epoch)
	}
	text += ": " + e.trigger.kind
	if e.trigger.member != "" {
		text += " " + e.trigger.member
	}
	if e.trigger.reason != "" {
		text += " (" + e.trigger.reason + ")"
	}
	g.emit(at, KindStreamsEpoch, epoch, e.trigger.member, text, map[string]any{"previous_epoch": old, "trigger": e.trigger.kind})
}

// recreatedBy reports whether ev, a StreamsGroupHeartbeat, joined a
// re-created group: a member joining (epoch 0) gets the group's target
// assignment epoch, at least every member epoch given before, unless the
// coordinator lost the group and started it again from epoch 1.
func (st *streamsState) recreatedBy(ev *decode.Event) bool {
	h := ev.StreamsGroupHeartbeat
	return ev.Responded() && h.ErrorCode == 0 && h.MemberEpoch == 0 && h.AssignedEpoch > 0 && h.AssignedEpoch < st.memberEpoch
}

// silent is the live member silent the longest at t, past three heartbeat
// intervals; nil when none is.
func (st *streamsState) silent(t time.Time) *smember {
	var out *smember
	for _, id := range sortedKeys(st.members) {
		m := st.members[id]
		if !m.alive || m.interval <= 0 || t.Sub(m.lastAt) <= 3*m.interval {
			continue
		}
		if out == nil || m.lastAt.Before(out.lastAt) {
			out = m
		}
	}
	return out
}

// epochRecord is the kept record of epoch, nil when dropped or never
// seen.
func (st *streamsState) epochRecord(epoch int32) *streamsEpoch {
	for i := len(st.epochs) - 1; i >= 0; i-- {
		if st.epochs[i].epoch == epoch {
			return st.epochs[i]
		}
		if st.epochs[i].epoch < epoch {
			break
		}
	}
	return nil
}

// streamsStep records a member's new epoch or tasks: what it got, from
// whom, and what it gave up.
func (g *group) streamsStep(ev *decode.Event, m *smember) {
	h := ev.StreamsGroupHeartbeat
	st := g.streams
	old := m.epoch
	m.epoch = h.AssignedEpoch
	if h.Active == nil && h.Standby == nil && h.Warmup == nil {
		return
	}
	na, ns, nw := tasksOf(h.Active), tasksOf(h.Standby), tasksOf(h.Warmup)
	if na == nil {
		na = m.active
	}
	if ns == nil {
		ns = m.standby
	}
	if nw == nil {
		nw = m.warmup
	}
	if na == nil {
		na = []task{}
	}
	if ns == nil {
		ns = []task{}
	}
	if nw == nil {
		nw = []task{}
	}
	first := m.active == nil
	gotA, lostA := taskMinus(na, m.active), taskMinus(m.active, na)
	gotS, lostS := taskMinus(ns, m.standby), taskMinus(m.standby, ns)
	gotW, lostW := taskMinus(nw, m.warmup), taskMinus(m.warmup, nw)
	// The moves belong to the group epoch: a member still revoking for it
	// answers with its previous member epoch, and may already get the new
	// epoch's standby and warm-up tasks.
	rec := st.epochRecord(st.epoch)
	var parts []string
	var notes []string
	for _, t := range gotA {
		mv := taskMove{at: ev.RespondedAt, task: t, kind: taskActive, to: m.id}
		if from := st.lastActive[t]; from != m.id {
			mv.from = from
		}
		switch {
		case hasTask(m.warmup, t):
			mv.promoted = taskWarmup
			if w := m.warming[t]; w != nil {
				w.promotedAt = ev.RespondedAt
				delete(m.warming, t)
			}
		case hasTask(m.standby, t):
			mv.promoted = taskStandby
		}
		st.lastActive[t] = m.id
		if rec != nil {
			rec.moves = append(rec.moves, mv)
		}
		n := "+" + t.String()
		if mv.from != "" {
			n += " from " + mv.from
		}
		switch mv.promoted {
		case taskWarmup:
			n += ", warm-up promoted"
		case taskStandby:
			n += ", standby promoted"
		}
		notes = append(notes, n)
	}
	for _, t := range lostA {
		notes = append(notes, "-"+t.String())
	}
	parts = append(parts, "active "+taskList(na)+paren(notes))
	notes = nil
	for _, t := range gotS {
		if rec != nil {
			rec.moves = append(rec.moves, taskMove{at: ev.RespondedAt, task: t, kind: taskStandby, to: m.id})
		}
		notes = append(notes, "+"+t.String())
	}
	for _, t := range lostS {
		notes = append(notes, "-"+t.String())
	}
	if len(ns) > 0 || len(notes) > 0 {
		parts = append(parts, "standby "+taskList(ns)+paren(notes))
	}
	notes = nil
	for _, t := range gotW {
		if rec != nil {
			rec.moves = append(rec.moves, taskMove{at: ev.RespondedAt, task: t, kind: taskWarmup, to: m.id})
		}
		w := &warmupRecord{task: t, member: m.id, at: ev.RespondedAt, lag: -1}
		m.warming[t] = w
		if len(st.warmups) < maxStreamsRecords {
			st.warmups = append(st.warmups, w)
		} else {
			st.dropped++
		}
		notes = append(notes, "+"+t.String())
	}
	for _, t := range lostW {
		if w := m.warming[t]; w != nil && !hasTask(na, t) {
			w.endAt = ev.RespondedAt
			delete(m.warming, t)
		}
		if !hasTask(na, t) {
			notes = append(notes, "-"+t.String())
		}
	}
	if len(nw) > 0 || len(notes) > 0 {
		parts = append(parts, "warm-up "+taskList(nw)+paren(notes))
	}
	m.updateLags()
	changed := len(gotA)+len(lostA)+len(gotS)+len(lostS)+len(gotW)+len(lostW) > 0
	m.active, m.standby, m.warmup = na, ns, nw
	if !changed && !first && old == m.epoch {
		return
	}
	m.step(streamsStep{at: ev.RespondedAt, epoch: m.epoch, active: na, standby: ns, warmup: nw})
	text := fmt.Sprintf("%s at epoch %d: %s", m.id, m.epoch, strings.Join(parts, ", "))
	if len(lostA) > 0 {
		text += "; revoking " + taskList(lostA)
	}
	g.emit(ev.RespondedAt, KindTasks, m.epoch, m.id, text, map[string]any{"member_epoch": m.epoch, "previous_epoch": old,
		"active": taskStrings(na), "standby": taskStrings(ns), "warmup": taskStrings(nw),
		"gained_active": taskStrings(gotA), "revoked_active": taskStrings(lostA)})
}

func paren(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, ", ") + ")"
}

// streamsLeave handles a member leaving (epoch -1, or -2 for a static
// member that will come back).
func (g *group) streamsLeave(ev *decode.Event, m *smember) {
	st := g.streams
	if !m.alive {
		return
	}
	how := "left"
	if ev.StreamsGroupHeartbeat.MemberEpoch == -2 {
		how = "left temporarily (static member: its tasks wait for it until its session times out)"
	}
	m.alive, m.leftAt, m.how = false, ev.At, "left"
	g.emit(ev.At, KindMemberLeft, st.epoch, m.id, fmt.Sprintf("%s %s at epoch %d, with active %s, standby %s, warm-up %s",
		m.id, how, m.epoch, taskList(m.active), taskList(m.standby), taskList(m.warmup)),
		map[string]any{"member_epoch": ev.StreamsGroupHeartbeat.MemberEpoch, "active": taskStrings(m.active)})
	st.causes = append(st.causes, trigger{kind: TriggerMemberLeft, member: m.id, at: ev.At})
	m.drop(ev.At)
	g.streamsReconciled(ev.At)
	g.streamsEmptied(ev.At, m)
}

// drop ends a departed member's tasks: its warm-ups end unpromoted, and
// its lane holds nothing from then (until it joins again).
func (m *smember) drop(at time.Time) {
	for t, w := range m.warming {
		w.endAt = at
		delete(m.warming, t)
	}
	if m.active != nil || m.standby != nil || m.warmup != nil {
		m.step(streamsStep{at: at, epoch: m.epoch, active: []task{}, standby: []task{}, warmup: []task{}})
	}
	m.active, m.standby, m.warmup = nil, nil, nil
}

// step appends s to the member's lane, which keeps the last
// maxStreamsSteps.
func (m *smember) step(s streamsStep) {
	if len(m.steps) >= maxStreamsSteps {
		m.steps = m.steps[1:]
	}
	m.steps = append(m.steps, s)
}

// streamsError handles an error answer: fencing, or a named error.
func (g *group) streamsError(ev *decode.Event, m *smember) {
	h := ev.StreamsGroupHeartbeat
	st := g.streams
	switch h.ErrorCode {
	case errFencedMemberEpoch, errStaleMemberEpoch, errUnknownMemberID:
		if !m.alive {
			return
		}
		name := errorName(h.ErrorCode)
		m.fences = append(m.fences, fence{at: ev.At, epoch: h.MemberEpoch, err: name})
		g.e.emit(Entry{At: ev.At, Group: g.id, Kind: KindFenced, Generation: st.epoch, Member: m.id,
			Text: fmt.Sprintf("%s fenced: %s at epoch %d; it must rejoin with epoch 0 and loses active %s, standby %s, warm-up %s",
				m.id, name, h.MemberEpoch, taskList(m.active), taskList(m.standby), taskList(m.warmup)),
			Fields:  map[string]any{"api": "StreamsGroupHeartbeat", "error": name, "member_epoch": h.MemberEpoch},
			Failure: &FailureFacts{API: "StreamsGroupHeartbeat", Error: name}})
		st.causes = append(st.causes, trigger{kind: TriggerMemberFenced, member: m.id, at: ev.At, reason: name})
		m.alive, m.leftAt, m.how = false, ev.At, name
		m.drop(ev.At)
		g.streamsReconciled(ev.At)
		g.streamsEmptied(ev.At, m)
	default:
		g.requestError(ev, "StreamsGroupHeartbeat", m.id, h.ErrorCode)
	}
}

// unassigned is the tasks that were active on some member and are active
// on no live member now, while the group has live members: once every
// member has left, the application is stopped, not short of owners.
func (st *streamsState) unassigned() []task {
	alive := false
	for _, m := range st.members {
		alive = alive || m.alive
	}
	if !alive {
		return nil
	}
	var out []task
	for t, last := range st.lastActive {
		held := false
		if m := st.members[last]; m != nil && m.alive && hasTask(m.active, t) {
			continue
		}
		for _, m := range st.members {
			if m.alive && hasTask(m.active, t) {
				held = true
				break
			}
		}
		if !held {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, compareTask)
	return out
}

// closeStreams tells what is left at the end of the input: tasks no live
// member holds active.
func (g *group) closeStreams(at time.Time) {
	st := g.streams
	if un := st.unassigned(); len(un) > 0 {
		var from []string
		for _, t := range un {
			from = append(from, t.String()+" (last on "+st.lastActive[t]+")")
		}
		g.emit(at, KindTasksUnassigned, st.epoch, "", "tasks active on no live member at the end of input: "+strings.Join(from, ", "),
			map[string]any{"tasks": taskStrings(un)})
	}
}
