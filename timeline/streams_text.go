package timeline

import (
	"fmt"
	"strings"
	"time"
)

// streamsLines renders a streams group's story for the text report: the
// group's epochs and topology, each epoch's task movements, each member's
// lane, the statuses raised and the warm-ups.
func streamsLines(r *StreamsReport, loc *time.Location) []string {
	head := fmt.Sprintf("streams group epoch %d", r.GroupEpoch)
	if r.AssignmentEpoch != nil {
		head += fmt.Sprintf(", assignment epoch %d, state %s", *r.AssignmentEpoch, r.State)
	}
	if r.TopologyEpoch != nil {
		head += fmt.Sprintf(", topology epoch %d", *r.TopologyEpoch)
	}
	if r.Assignor != "" {
		head += ", assignor " + r.Assignor
	}
	if r.AcceptableRecoveryLagRecords != nil {
		head += fmt.Sprintf(", acceptable recovery lag %d", *r.AcceptableRecoveryLagRecords)
	}
	out := []string{head}
	for _, s := range r.Subtopologies {
		in := append(append([]string{}, s.SourceTopics...), s.RepartitionSourceTopics...)
		in = append(in, s.SourceTopicRegex...)
		line := fmt.Sprintf("  subtopology %s reads %s", s.ID, orNoneList(in))
		if len(s.RepartitionSinkTopics) > 0 {
			line += ", writes " + strings.Join(s.RepartitionSinkTopics, " ")
		}
		if len(s.StateChangelogTopics) > 0 {
			line += ", changelogs " + strings.Join(s.StateChangelogTopics, " ")
		}
		out = append(out, line)
	}
	if r.EpochsDropped > 0 {
		out = append(out, fmt.Sprintf("  %d earlier epochs not kept", r.EpochsDropped))
	}
	for _, e := range r.Epochs {
		line := fmt.Sprintf("  epoch %d at %s: %s", e.Epoch, clockOf(&e.At, loc), triggerLine(e.Trigger))
		switch {
		case e.ReconcileMs != nil && *e.ReconcileMs == 0:
			line += ", reconciled at once"
		case e.ReconcileMs != nil:
			line += ", reconciled in " + msText(e.ReconcileMs)
		}
		out = append(out, line)
		for _, m := range e.Moves {
			out = append(out, "    "+moveText(m))
		}
	}
	for _, m := range r.Members {
		line := fmt.Sprintf("  member %s epoch %d %s: active %s, standby %s, warm-up %s", m.MemberID, m.MemberEpoch, m.Status,
			orNoneList(m.Tasks.Active), orNoneList(m.Tasks.Standby), orNoneList(m.Tasks.Warmup))
		line += fmt.Sprintf(" (process %s, endpoint %s, topology epoch %d)", orUnknown(m.ProcessID), orNoneStr(m.UserEndpoint), m.TopologyEpoch)
		out = append(out, line)
		if t := m.Target; t != nil {
			out = append(out, fmt.Sprintf("    target: active %s, standby %s, warm-up %s", orNoneList(t.Active), orNoneList(t.Standby), orNoneList(t.Warmup)))
		}
		for _, s := range m.Lane {
			out = append(out, fmt.Sprintf("    %s epoch %d: active %s, standby %s, warm-up %s", clockOf(&s.At, loc), s.Epoch,
				orNoneList(s.Active), orNoneList(s.Standby), orNoneList(s.Warmup)))
		}
		for _, f := range m.Fences {
			out = append(out, fmt.Sprintf("    %s fenced at epoch %d: %s", clockOf(&f.At, loc), f.Epoch, f.Error))
		}
	}
	for _, s := range r.Statuses {
		line := fmt.Sprintf("  status %s raised %s by %s: %s", s.Name, clockOf(&s.RaisedAt, loc), s.MemberID, s.Detail)
		if s.ClearedAt != nil {
			line += ", cleared " + clockOf(s.ClearedAt, loc)
		} else {
			line += ", still raised at the end of input"
		}
		out = append(out, line)
	}
	for _, w := range r.Warmups {
		line := fmt.Sprintf("  warm-up %s on %s from %s", w.Task, w.MemberID, clockOf(&w.AssignedAt, loc))
		switch {
		case w.PromotedAt != nil:
			line += ", promoted " + clockOf(w.PromotedAt, loc)
		case w.EndedAt != nil:
			line += ", ended unpromoted " + clockOf(w.EndedAt, loc)
		default:
			line += ", still warming up at the end of input"
		}
		if w.WarmingMs != nil {
			line += " after " + msText(w.WarmingMs)
		}
		if w.Lag != nil {
			line += fmt.Sprintf(", lag %d", *w.Lag)
		}
		out = append(out, line)
	}
	if r.RecordsDropped > 0 {
		out = append(out, fmt.Sprintf("  %d more statuses and warm-ups not kept", r.RecordsDropped))
	}
	if len(r.UnassignedTasks) > 0 {
		out = append(out, "  tasks active on no live member at the end of input: "+strings.Join(r.UnassignedTasks, " "))
	}
	return out
}

// moveText tells one task movement.
func moveText(m TaskMove) string {
	kind := m.Kind
	if kind == taskWarmup {
		kind = "warm-up"
	}
	s := fmt.Sprintf("%s %s %s", m.Task, kind, m.To)
	if m.From != "" {
		s = fmt.Sprintf("%s %s %s → %s", m.Task, kind, m.From, m.To)
	}
	if m.Promoted != "" {
		p := m.Promoted
		if p == taskWarmup {
			p = "warm-up"
		}
		s += " (" + p + " promoted)"
	}
	return s
}

func orNoneList(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func orNoneStr(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
