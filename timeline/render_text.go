package timeline

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/internal/printable"
)

// WriteText renders r for people: per group, each generation with its
// summary block, then storms and what is unknown. Clock times are shown in
// loc (UTC when nil).
func WriteText(w io.Writer, r *Report, loc *time.Location) error {
	bw := bufio.NewWriter(w)
	for i, g := range r.Groups {
		if i > 0 {
			bw.WriteString("\n")
		}
		writeGroupText(bw, g, loc)
	}
	if r.Unobserved != nil {
		if len(r.Groups) > 0 {
			bw.WriteString("\n")
		}
		bw.WriteString(unobservedLine(r.Unobserved) + "\n")
	}
	return bw.Flush()
}

// WriteEntryText writes an entry in its console form, with its summary
// block if it has one.
func WriteEntryText(w io.Writer, e Entry) error {
	// Lines joined, in one string built in place and written at once.
	n := len("15:04:05.000 ") + len(e.Group) + len("   ") + len(e.Text) + 1
	for _, d := range e.Detail {
		n += len("\n    ") + len(d)
	}
	var b strings.Builder
	b.Grow(n)
	e.writeLine(&b)
	for _, d := range e.Detail {
		b.WriteString("\n    ")
		b.WriteString(printable.String(d))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

func writeGroupText(w *bufio.Writer, g GroupReport, loc *time.Location) {
	// Each line is built whole, then written escaped (printable): the ids
	// and names in it are the clients' choice, and none may start a line
	// of its own.
	var l strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&l, format, args...) }
	end := func() {
		w.WriteString(printable.String(l.String()))
		w.WriteByte('\n')
		l.Reset()
	}
	f("group %s (%s protocol", g.Group, g.GroupProtocol)
	if g.ProtocolType != "" {
		f(", protocol type %s", g.ProtocolType)
	}
	f(") seen %s to %s", clockOf(&g.FirstSeen, loc), clockOf(&g.LastSeen, loc))
	if c := g.Coordinator; c != nil {
		f(", coordinator node %d (%s:%d)", c.NodeID, c.Host, c.Port)
	}
	end()
	for _, gen := range g.Generations {
		label := "gen"
		if epochMode(gen.Mode) {
			label = "group epoch"
		}
		f("  %s %d %s", label, gen.Generation, gen.Status)
		if gen.StartedAt != nil {
			f(", started %s", clockOf(gen.StartedAt, loc))
		}
		if gen.StableAt != nil {
			f(", stable %s", clockOf(gen.StableAt, loc))
		}
		if d := durationText(gen); d != "" {
			f(": %s", d)
		}
		end()
		for _, s := range summaryLines(gen, -1, loc) {
			f("    %s", s)
			end()
		}
	}
	if p := g.PendingRebalance; p != nil {
		f("  pending rebalance toward gen %d, started %s: %s", p.Generation, clockOf(p.StartedAt, loc), triggerLine(p.Trigger))
		end()
	}
	for _, s := range g.Storms {
		state := "ongoing at the end of input"
		if !s.Ongoing {
			state = "ended " + clockOf(s.EndedAt, loc)
		}
		f("  storm %s to %s: %d rebalances (gens %s), dominant trigger %s %s, members %s; %s",
			clockOf(&s.From, loc), clockOf(&s.To, loc), s.Rebalances, joinInts(s.Generations), s.DominantTrigger,
			countsText(s.Triggers), listNames(s.Members, 10), state)
		end()
	}
	for _, m := range g.Migrations {
		f("  %s", migrationLine(m, loc))
		end()
	}
	for _, cm := range g.ConsumerMembers {
		f("  member %s", cm.MemberID)
		if cm.Protocol == ProtocolClassic {
			f(" (classic protocol)")
		}
		f(" epoch %d %s", cm.MemberEpoch, partsText(cm.Assignment))
		if !cm.Active {
			f(" (inactive)")
		}
		end()
		for _, e := range cm.Epochs {
			f("    %s epoch %d %s%s%s", clockOf(&e.At, loc), e.Epoch, partsText(e.Assignment),
				signed("+", e.Added), signed("-", e.Revoked))
			end()
		}
		for _, fence := range cm.Fences {
			f("    %s fenced at epoch %d: %s", clockOf(&fence.At, loc), fence.Epoch, fence.Error)
			end()
		}
	}
	if g.Share != nil {
		for _, s := range shareLines(g.Share, loc) {
			f("  %s", s)
			end()
		}
	}
	if g.Streams != nil {
		for _, s := range streamsLines(g.Streams, loc) {
			f("  %s", s)
			end()
		}
	}
	for _, u := range g.Unknown {
		f("  unknown %s: %s", u.What, u.Why)
		end()
	}
}

// durationText is the headline timing of a generation.
func durationText(gen GenerationReport) string {
	if epochMode(gen.Mode) {
		if gen.ReconcileMs == nil {
			return "no stop-the-world (members reconcile one by one)"
		}
		return "reconciled in " + msText(gen.ReconcileMs) + " (no stop-the-world: members reconcile one by one)"
	}
	if gen.StopTheWorldMs == nil {
		return ""
	}
	s := "stop-the-world " + msText(gen.StopTheWorldMs)
	if gen.StartIsUpperBound {
		s = "stop-the-world at least " + msText(gen.StopTheWorldMs)
	}
	var parts []string
	if gen.JoinMs != nil {
		parts = append(parts, "join "+msText(gen.JoinMs))
	}
	if gen.SyncMs != nil {
		parts = append(parts, "sync "+msText(gen.SyncMs))
	}
	if gen.LeaderPlanMs != nil {
		parts = append(parts, "leader's plan "+msText(gen.LeaderPlanMs))
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// summaryLines is a generation's summary block, used by the live stable
// entry (members capped at maxMembers) and the text report (maxMembers < 0:
// all).
func summaryLines(gen GenerationReport, maxMembers int, loc *time.Location) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	addLine := func(l string) { out = append(out, l) } // addLine(l) without fmt
	t := "trigger: " + triggerLine(gen.Trigger)
	if gen.Trigger.At != nil {
		t += " at " + clockOf(gen.Trigger.At, loc)
	}
	if gen.FollowUpOf != nil {
		t += fmt.Sprintf(" (follow-up of gen %d, chain %d)", *gen.FollowUpOf, gen.FollowUpChain)
	}
	addLine(t)
	proto := gen.Protocol
	if proto == "" {
		proto = "unknown"
	}
	if gen.ProtocolType != "" && gen.ProtocolType != "consumer" {
		proto = gen.ProtocolType + "/" + proto
	}
	line := fmt.Sprintf("protocol %s (%s)", proto, gen.Mode)
	if gen.Mode == ModeShare {
		line = "share group (KIP-932): the coordinator assigns partitions, which members may share"
	}
	if !epochMode(gen.Mode) {
		leader := gen.Leader
		if leader == "" {
			leader = "unknown"
		}
		line += ", leader " + leader
		if lc := gen.LeaderChange; lc != nil {
			line += fmt.Sprintf(" (was %s: %s)", lc.Previous, lc.Reason)
		}
	}
	if gen.RebalanceTimeoutMs != nil {
		line += ", rebalance timeout " + msText(gen.RebalanceTimeoutMs)
	}
	addLine(line)
	if gen.WaitedFor != "" {
		add("group waited for %s (slowest to rejoin)", gen.WaitedFor)
	}
	n := 0
	for _, m := range gen.Members {
		if m.ReplacedBy != "" {
			continue
		}
		n++
	}
	add("members (%d):", n)
	shown := 0
	for _, m := range gen.Members {
		if maxMembers >= 0 && shown == maxMembers {
			add("  … %d more (see the report)", len(gen.Members)-shown)
			break
		}
		shown++
		addLine("  " + memberLine(gen, m, loc))
	}
	for _, d := range gen.Departed {
		l := fmt.Sprintf("departed %s: %s", d.MemberID, d.How)
		if d.Reason != "" {
			l += " (" + d.Reason + ")"
		}
		if d.At != nil {
			l += " at " + clockOf(d.At, loc)
		}
		if len(d.Partitions) > 0 {
			l += ", had " + partsText(d.Partitions)
		}
		addLine(l)
	}
	for _, rj := range gen.RejoinsWithoutRebalance {
		l := fmt.Sprintf("rejoined without rebalance %s at %s", rj.MemberID, clockOf(&rj.At, loc))
		if rj.Replaces != "" {
			l += fmt.Sprintf(" (static member %s, replaces %s)", rj.InstanceID, rj.Replaces)
		}
		addLine(l)
	}
	if gen.Unassigned != nil && len(gen.Unassigned) > 0 {
		add("unassigned: %s", partsText(gen.Unassigned))
	}
	if len(gen.MembersWithNothing) > 0 {
		add("members with nothing: %s", listNames(gen.MembersWithNothing, 10))
	}
	for _, c := range gen.CommitsDuringRevocation {
		add("commit during revocation %s", commitLine(c, loc))
	}
	for _, s := range gen.SuspectCommits {
		l := fmt.Sprintf("suspect commit %s %s[%d]=%d (gen %d) at %s: %s", s.MemberID, s.Topic, s.Partition, s.Offset,
			s.Generation, clockOf(&s.At, loc), strings.Join(s.Reasons, ", "))
		if s.CommittedOffset != nil {
			l += fmt.Sprintf("; committed before %d by %s", *s.CommittedOffset, orDash(s.CommittedBy))
		}
		l += "; owner " + orDash(s.Owner)
		addLine(l)
	}
	if gen.Unsettled != "" {
		add("unsettled: %s", gen.Unsettled)
	}
	for _, u := range gen.Unknown {
		add("unknown %s: %s", u.What, u.Why)
	}
	return out
}

func memberLine(gen GenerationReport, m MemberReport, loc *time.Location) string {
	var b strings.Builder
	b.WriteString(m.MemberID)
	if m.Status != "" {
		b.WriteString(" [" + m.Status + "]")
	}
	if epochMode(gen.Mode) && m.Protocol == ProtocolClassic {
		b.WriteString(" classic protocol") // a classic member of a consumer group (online migration)
	}
	if m.InstanceID != "" {
		b.WriteString(" instance " + m.InstanceID)
	}
	if c := strings.TrimSpace(m.ClientID + " " + m.ClientAddr); c != "" {
		b.WriteString(" (client " + c + ")")
	}
	if m.JoinedAt != nil && !epochMode(gen.Mode) {
		b.WriteString(", JoinGroup at " + clockOf(m.JoinedAt, loc))
		if m.JoinWaitMs != nil {
			b.WriteString(" held " + msText(m.JoinWaitMs))
		}
		if m.StopTheWorldMs != nil {
			b.WriteString(", assigned after " + msText(m.StopTheWorldMs))
		}
	}
	if m.MemberEpoch != nil {
		fmt.Fprintf(&b, " epoch %d", *m.MemberEpoch)
	}
	if m.Subscription != nil {
		b.WriteString(", subscribed [" + strings.Join(m.Subscription, " ") + "]")
	}
	if m.Rack != "" {
		b.WriteString(" rack " + m.Rack)
	}
	if len(m.OwnedPartitions) > 0 {
		b.WriteString(" owned " + partsText(m.OwnedPartitions))
	}
	if m.ReplacedBy != "" {
		b.WriteString(" replaced by " + m.ReplacedBy)
		return b.String()
	}
	b.WriteString(" → ")
	if m.Assignment == nil {
		b.WriteString("assignment unknown")
	} else {
		b.WriteString(partsText(m.Assignment))
	}
	cur := fromMap(m.Assignment)
	b.WriteString(change("-", fromMap(m.Revoked), cur) + change("+", fromMap(m.Added), cur))
	b.WriteString(classicStreamsText(m.Streams, loc))
	return b.String()
}

func commitLine(c CommitReport, loc *time.Location) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s gen %d at %s", c.MemberID, c.Generation, clockOf(&c.At, loc))
	listed, total := 0, 0
	for _, t := range sortedKeys(c.Offsets) {
		for i, p := range sortedKeys(c.Offsets[t]) {
			if total++; listed == maxListed {
				continue
			}
			b.WriteByte(' ')
			if i == 0 {
				b.WriteString(t)
			}
			writeOffset(&b, p, c.Offsets[t][p])
			listed++
		}
	}
	writeMore(&b, total-listed)
	switch c.Result {
	case "failed":
		b.WriteString(" FAILED")
		listed, failed := 0, 0
		for _, t := range sortedKeys(c.Errors) {
			for _, p := range sortedKeys(c.Errors[t]) {
				if failed++; listed < maxListed {
					fmt.Fprintf(&b, " %s[%d] %s", t, p, c.Errors[t][p])
					listed++
				}
			}
		}
		writeMore(&b, failed-listed)
	default:
		b.WriteString(" " + c.Result)
	}
	if c.LatencyMs != nil {
		b.WriteString(" (" + msText(c.LatencyMs) + ")")
	}
	if t := c.Transaction; t != nil {
		fmt.Fprintf(&b, "; transaction %s (producer %d epoch %d) %s", t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.Outcome)
		switch t.Outcome {
		case TxnCommitted, TxnAborted:
			b.WriteString(" at " + clockOf(t.EndedAt, loc))
		default:
			b.WriteString(": no EndTxn seen")
		}
		if t.Outcome == TxnAborted {
			b.WriteString(", offsets discarded")
		}
	}
	return b.String()
}

// writeOffset writes "[p]=offset", as fmt's "[%d]=%d" would.
func writeOffset(b *strings.Builder, p int32, offset int64) {
	b.WriteByte('[')
	b.WriteString(strconv.Itoa(int(p)))
	b.WriteString("]=")
	b.WriteString(strconv.FormatInt(offset, 10))
}

func triggerLine(t TriggerReport) string {
	s := strings.ReplaceAll(t.Kind, "_", " ")
	if t.Member != "" {
		s += " " + t.Member
	}
	if t.Reason != "" {
		s += fmt.Sprintf(" (%s)", t.Reason)
	}
	return s
}

func partsText(m map[string][]int32) string {
	if m == nil {
		return "unknown"
	}
	if len(m) == 0 {
		return "nothing"
	}
	return fromMap(m).String()
}

func signed(sign string, m map[string][]int32) string {
	if len(m) == 0 {
		return ""
	}
	return " (" + sign + fromMap(m).String() + ")"
}

func msText(v *float64) string {
	if v == nil {
		return "unknown"
	}
	return human(time.Duration(*v * float64(time.Millisecond)))
}

// clockOf renders an RFC 3339 stamp from a report as a time of day in loc.
func clockOf(s *string, loc *time.Location) string {
	if s == nil {
		return "unknown"
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return *s
	}
	return clock(t, loc)
}

func joinInts(ns []int32) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, " ")
}

func countsText(m map[string]int) string {
	ks := sortedKeys(m)
	sort.SliceStable(ks, func(i, j int) bool { return m[ks[i]] > m[ks[j]] })
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// migrationLine is the text report's line for an online migration.
func migrationLine(m MigrationReport, loc *time.Location) string {
	var b strings.Builder
	switch m.Direction {
	case MigrationUpgrade:
		b.WriteString("online upgrade to the consumer protocol")
	default:
		b.WriteString("online downgrade to the classic protocol")
	}
	fmt.Fprintf(&b, ": started %s by %s", clockOf(&m.StartedAt, loc), m.StartedBy)
	if m.ConvertedAt != nil && m.Generation != nil {
		fmt.Fprintf(&b, ", group type changed %s at generation %d (%s)", clockOf(m.ConvertedAt, loc), *m.Generation, m.ConvertedBy)
	}
	switch {
	case m.CompletedAt == nil:
		b.WriteString(", under way at the end of input")
	case m.LastMember != "":
		fmt.Fprintf(&b, ", complete %s (last %s member %s gone)", clockOf(m.CompletedAt, loc),
			map[string]string{MigrationUpgrade: "classic", MigrationDowngrade: "consumer-protocol"}[m.Direction], m.LastMember)
	default:
		fmt.Fprintf(&b, ", complete %s", clockOf(m.CompletedAt, loc))
	}
	return b.String()
}
