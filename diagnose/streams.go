package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/timeline"
)

// Streams groups (KIP-1071): the findings read the timeline's streams
// view (GroupView.Streams), whose member lanes say which member held
// which task when.

// streams makes the streams-group findings of gr: members fenced, tasks
// no live member held active for long, warm-ups that never caught up.
func (e *Engine) streams(g *groupState, gr *timeline.GroupView) []Finding {
	st := gr.Streams
	if st == nil {
		return nil
	}
	var out []Finding
	out = append(out, e.streamsFenced(g, st)...)
	out = append(out, e.streamsUnassigned(g, gr)...)
	out = append(out, e.streamsWarmups(g, st, gr.LastSeen)...)
	return out
}

// streamsMember is m as a finding names it.
func streamsMember(m *timeline.StreamsMemberView) Member {
	return Member{MemberID: m.MemberID, ClientID: m.ClientID, InstanceID: m.InstanceID, ClientAddr: m.ClientAddr}
}

// heldAt is the tasks m's lane holds at t: the last step at or before t;
// none before its first step.
func heldAt(m *timeline.StreamsMemberView, t time.Time) timeline.StreamsStepView {
	var held timeline.StreamsStepView
	for _, s := range m.Lane {
		if s.At.After(t) {
			break
		}
		held = s
	}
	return held
}

// streamsFenced makes a streams_member_fenced finding per fencing.
func (e *Engine) streamsFenced(g *groupState, st *timeline.StreamsView) []Finding {
	var out []Finding
	for i := range st.Members {
		m := &st.Members[i]
		for _, fe := range m.Fences {
			at := fe.At
			// The lane's last step is the empty one the fencing added:
			// what it lost is what it held just before.
			lost := heldAt(m, at.Add(-time.Nanosecond))
			f := newFinding(StreamsMemberFenced, g.id, Critical, at, m.MemberID)
			f.Members = []Member{streamsMember(m)}
			f.Evidence["error"] = fe.Error
			f.Evidence["memberEpoch"] = fe.Epoch
			f.Evidence["groupEpoch"] = st.GroupEpoch
			f.Evidence["activeLost"] = nonNilStrings(lost.Active)
			f.Evidence["standbyLost"] = nonNilStrings(lost.Standby)
			f.Evidence["processId"] = m.ProcessID
			f.Explanation = fmt.Sprintf("the coordinator fenced streams member %s (%s at member epoch %d): it missed its heartbeats or did not revoke its tasks within the rebalance timeout. Its active tasks (%s) move to other members, which restore their state from the changelogs and reprocess from the last commit; the member must rejoin with epoch 0",
				m.MemberID, fe.Error, fe.Epoch, listOrNone(lost.Active))
			f.Suggestion = advice(StreamsMemberFenced)
			out = append(out, f)
		}
	}
	return out
}

// streamsUnassigned makes a streams_tasks_unassigned finding per run of
// time, at least UnownedAfter long, in which tasks that had been active
// were active on no member while the group had live members.
func (e *Engine) streamsUnassigned(g *groupState, gr *timeline.GroupView) []Finding {
	st := gr.Streams
	end := gr.LastSeen
	type span struct{ from, to time.Time }
	live := func(m *timeline.StreamsMemberView) []span {
		// A member is live from each join to its leaving; a member seen
		// only in a describe has no lane and does not count.
		if len(m.Lane) == 0 {
			return nil
		}
		to := end
		if !m.LeftAt.IsZero() {
			to = m.LeftAt
		}
		return []span{{m.Lane[0].At, to}}
	}
	// The times at which what is held may change.
	var times []time.Time
	for i := range st.Members {
		for _, s := range st.Members[i].Lane {
			times = append(times, s.At)
		}
		if l := st.Members[i].LeftAt; !l.IsZero() {
			times = append(times, l)
		}
	}
	times = append(times, end)
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	times = slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
	known := map[string]bool{}
	open := map[string]time.Time{} // task -> since when no one holds it
	type gap struct {
		from, to time.Time
		tasks    []string
	}
	var gaps []gap
	closeGap := func(task string, to time.Time) {
		from := open[task]
		delete(open, task)
		if to.Sub(from) < e.cfg.UnownedAfter {
			return
		}
		for i := range gaps {
			if gaps[i].from.Equal(from) && gaps[i].to.Equal(to) {
				gaps[i].tasks = append(gaps[i].tasks, task)
				return
			}
		}
		gaps = append(gaps, gap{from, to, []string{task}})
	}
	for _, t := range times {
		held, anyLive := map[string]bool{}, false
		for i := range st.Members {
			m := &st.Members[i]
			for _, sp := range live(m) {
				if !t.Before(sp.from) && t.Before(sp.to) {
					anyLive = true
					for _, task := range heldAt(m, t).Active {
						held[task] = true
						known[task] = true
					}
				}
			}
		}
		for _, task := range sortedKeys(known) {
			_, gapOpen := open[task]
			switch {
			case held[task] && gapOpen, !anyLive && gapOpen:
				closeGap(task, t)
			case !held[task] && anyLive && !gapOpen:
				open[task] = t
			}
		}
	}
	for _, task := range sortedKeys(open) {
		closeGap(task, end)
	}
	var out []Finding
	for _, gp := range gaps {
		slices.SortFunc(gp.tasks, compareTaskIDs)
		f := newFinding(StreamsTasksUnassigned, g.id, Critical, gp.from, "")
		f.Evidence["tasks"] = gp.tasks
		f.Evidence["unassignedMs"] = ms(gp.to.Sub(gp.from))
		f.Evidence["until"] = stamp(gp.to)
		f.Evidence["groupEpoch"] = st.GroupEpoch
		why := "no status the coordinator raised says why: the member they were assigned to may never have taken them"
		if raised := statusesDuring(st, gp.from, gp.to); len(raised) > 0 {
			f.Evidence["statuses"] = raised
			why = "the coordinator said, meanwhile: " + strings.Join(raised, ", ")
		}
		f.Explanation = fmt.Sprintf("tasks %s were active on no live member of the streams group for %.1f s: nothing processed their partitions; %s",
			strings.Join(gp.tasks, " "), gp.to.Sub(gp.from).Seconds(), why)
		f.Suggestion = advice(StreamsTasksUnassigned)
		out = append(out, f)
	}
	return out
}

// statusesDuring is the names of the statuses raised at some time
// between from and to, in the order raised, each once.
func statusesDuring(st *timeline.StreamsView, from, to time.Time) []string {
	var out []string
	for _, s := range st.Statuses {
		raised, cleared := s.RaisedAt, s.ClearedAt
		if raised.After(to) || (!cleared.IsZero() && cleared.Before(from)) || slices.Contains(out, s.Name) {
			continue
		}
		out = append(out, s.Name)
	}
	return out
}

// warmupStuckAfter is how long a warm-up may run unpromoted before it is
// a finding: the broker promotes a warm-up once its lag is under the
// acceptable recovery lag, which a healthy restore reaches in seconds to
// minutes.
const warmupStuckAfter = 5 * time.Minute

// streamsWarmups makes a streams_warmup_stuck finding per warm-up that ran
// warmupStuckAfter or more without being promoted (still running at the
// end of the input, or taken away).
func (e *Engine) streamsWarmups(g *groupState, st *timeline.StreamsView, end time.Time) []Finding {
	byID := map[string]*timeline.StreamsMemberView{}
	for i := range st.Members {
		byID[st.Members[i].MemberID] = &st.Members[i]
	}
	var out []Finding
	for _, w := range st.Warmups {
		until := end
		if !w.EndedAt.IsZero() {
			until = w.EndedAt
		}
		warming := until.Sub(w.AssignedAt)
		if !w.PromotedAt.IsZero() || until.IsZero() || warming < warmupStuckAfter {
			continue
		}
		f := newFinding(StreamsWarmupStuck, g.id, Warning, w.AssignedAt, w.MemberID)
		if m := byID[w.MemberID]; m != nil {
			f.Members = []Member{streamsMember(m)}
		}
		f.Evidence["task"] = w.Task
		f.Evidence["warmingMs"] = ms(warming)
		how := "still warming up at the end of the input"
		if !w.EndedAt.IsZero() {
			how = "taken away unpromoted at " + stamp(w.EndedAt)
			f.Evidence["endedAt"] = stamp(w.EndedAt)
		}
		lag := "unknown"
		if w.Lag >= 0 {
			f.Evidence["lag"] = w.Lag
			lag = fmt.Sprint(w.Lag)
		}
		if st.AcceptableRecoveryLag >= 0 {
			f.Evidence["acceptableRecoveryLag"] = st.AcceptableRecoveryLag
			lag += fmt.Sprintf(" (acceptable: %d)", st.AcceptableRecoveryLag)
		}
		f.Explanation = fmt.Sprintf("warm-up task %s on %s ran %.0f s without catching up (%s; last changelog lag %s): the task stays active on its old member, and the group keeps paying for a restore that does not finish",
			w.Task, w.MemberID, warming.Seconds(), how, lag)
		f.Suggestion = advice(StreamsWarmupStuck)
		out = append(out, f)
	}
	return out
}

// compareTaskIDs orders task ids ("0_1") by subtopology and partition, as
// numbers when they are.
func compareTaskIDs(a, b string) int {
	as, ap, _ := strings.Cut(a, "_")
	bs, bp, _ := strings.Cut(b, "_")
	if c := compareNumeric(as, bs); c != 0 {
		return c
	}
	return compareNumeric(ap, bp)
}

func compareNumeric(a, b string) int {
	if len(a) != len(b) && strings.Trim(a, "0123456789") == "" && strings.Trim(b, "0123456789") == "" {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
