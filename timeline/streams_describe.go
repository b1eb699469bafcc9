package timeline

import (
	"cmp"
	"fmt"

	"github.com/kproxy-dev/kproxy/decode"
)

// What a StreamsGroupDescribe tells of a streams group: its state,
// epochs, topology, and each member's current and target tasks.

// streamsDescribe records what a StreamsGroupDescribe answered: epochs,
// state, topology and each member's target assignment.
func (g *group) streamsDescribe(ev *decode.Event) {
	d := ev.StreamsGroupDescribe
	if !ev.Responded() || !d.Described || d.ErrorCode != 0 {
		return
	}
	st := g.streamsState()
	changed := !st.described || st.state != d.State || st.assignmentEpoch != d.AssignmentEpoch || d.GroupEpoch > st.epoch
	st.described, st.state, st.assignmentEpoch = true, d.State, d.AssignmentEpoch
	if d.AssignorName != "" {
		st.assignor = d.AssignorName
	}
	if d.Topology != nil && (st.topology == nil || d.Topology.Epoch >= st.topology.Epoch) {
		st.topology = d.Topology
	}
	if d.GroupEpoch > st.epoch {
		g.streamsEpoch(d.GroupEpoch, ev.RespondedAt)
	}
	for i := range d.Members {
		dm := &d.Members[i]
		m := st.members[dm.MemberID]
		if m == nil {
			m = &smember{id: dm.MemberID, warming: map[task]*warmupRecord{}}
			st.members[dm.MemberID] = m
		}
		t := dm.Target
		m.target = &t
		if m.active == nil && m.how == "" {
			// A member whose assignment no heartbeat showed (kproxy
			// started after it joined): the describe's current one.
			g.streamsDescribed(ev, m, dm)
		}
		m.processID = cmp.Or(m.processID, dm.ProcessID)
		m.endpoint = cmp.Or(m.endpoint, dm.UserEndpoint)
		m.clientID = cmp.Or(m.clientID, dm.ClientID)
		if dm.TopologyEpoch > m.topologyEpoch {
			m.topologyEpoch = dm.TopologyEpoch
		}
		if dm.TaskOffsets != nil {
			m.offsets = offsetMap(dm.TaskOffsets)
		}
		if dm.TaskEndOffsets != nil {
			m.ends = offsetMap(dm.TaskEndOffsets)
		}
		m.updateLags()
	}
	if changed {
		g.emit(ev.RespondedAt, KindStreamsEpoch, d.GroupEpoch, "", fmt.Sprintf("described: state %s, group epoch %d, assignment epoch %d, %d members",
			d.State, d.GroupEpoch, d.AssignmentEpoch, len(d.Members)),
			map[string]any{"state": d.State, "group_epoch": d.GroupEpoch, "assignment_epoch": d.AssignmentEpoch})
	}
}

// streamsDescribed takes a member's epoch and current assignment from a
// describe, as its lane's first step.
func (g *group) streamsDescribed(ev *decode.Event, m *smember, dm *decode.StreamsMember) {
	st := g.streams
	m.alive, m.epoch = true, dm.MemberEpoch
	m.active, m.standby, m.warmup = tasksOf(dm.Assignment.Active), tasksOf(dm.Assignment.Standby), tasksOf(dm.Assignment.Warmup)
	for _, t := range m.active {
		if st.lastActive[t] == "" {
			st.lastActive[t] = m.id
		}
	}
	m.step(streamsStep{at: ev.RespondedAt, epoch: m.epoch, active: m.active, standby: m.standby, warmup: m.warmup})
	g.emit(ev.RespondedAt, KindTasks, m.epoch, m.id, fmt.Sprintf("%s at epoch %d (described): active %s, standby %s, warm-up %s",
		m.id, m.epoch, taskList(m.active), taskList(m.standby), taskList(m.warmup)),
		map[string]any{"member_epoch": m.epoch, "active": taskStrings(m.active), "standby": taskStrings(m.standby), "warmup": taskStrings(m.warmup)})
}
