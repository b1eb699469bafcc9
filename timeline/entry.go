package timeline

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/internal/printable"
)

// Kind names what an Entry is about. The values are stable: they appear in
// JSONL output and in structured logs.
type Kind string

// Entry kinds.
const (
	KindCoordinator      Kind = "coordinator"       // the group's coordinator node changed
	KindRebalanceStarted Kind = "rebalance_started" // the group left Stable, with the trigger known so far
	KindTrigger          Kind = "trigger"           // the trigger, once the joins revealed a better one
	KindMemberJoined     Kind = "member_joined"     // a member's JoinGroup for the new generation
	KindMemberLeft       Kind = "member_left"       // LeaveGroup, with the client's reason
	KindSessionExpired   Kind = "session_expired"   // inferred: no heartbeat within the session timeout
	KindMemberDropped    Kind = "member_dropped"    // a member missing from the new generation
	KindStaticRejoin     Kind = "rejoin"            // a member rejoined without a rebalance (static restart)
	KindLeader           Kind = "leader"            // the join phase ended: leader, assignor, members
	KindPlan             Kind = "plan"              // the assignment and what moved
	KindStable           Kind = "stable"            // every member has its assignment; Detail has the summary
	KindSuperseded       Kind = "superseded"        // a new rebalance began before the generation was stable
	KindCommit           Kind = "commit"            // a commit during revocation, or a failed commit
	KindSuspectCommit    Kind = "suspect_commit"    // a commit for a partition not owned, or moving backwards
	KindTxnEnded         Kind = "txn_ended"         // the transaction of a transactional commit told, or aborted, ended
	KindUnsettled        Kind = "unsettled"         // a cooperative chain that does not settle
	KindStorm            Kind = "storm"             // too many rebalances within the storm window
	KindStormEnded       Kind = "storm_ended"       // the storm window passed without another rebalance
	KindError            Kind = "error"             // a group request failed with an error worth naming
	KindEpoch            Kind = "epoch"             // KIP-848: a member's epoch or assignment changed
	KindFenced           Kind = "fenced"            // a member was fenced
	KindPartial          Kind = "partial"           // something kproxy could not see
	KindIncomplete       Kind = "incomplete"        // the input ended before a rebalance finished
	KindGroupEmpty       Kind = "group_empty"       // the last member left
	KindRecreated        Kind = "recreated"         // the generation went back: a new history of the group starts
	KindMigration        Kind = "migration"         // an online migration between the classic and the consumer protocol
)

// subKinds are printed indented under the rebalance they belong to.
var subKinds = map[Kind]bool{
	KindMemberJoined: true, KindMemberLeft: true, KindSessionExpired: true,
	KindMemberDropped: true, KindCommit: true, KindSuspectCommit: true, KindTxnEnded: true,
	KindEpoch: true, KindFenced: true, KindError: true, KindPartial: true,
}

// Entry is one line of the live timeline.
type Entry struct {
	// At is when the fact happened (from the events, never the wall clock).
	At time.Time
	// Group is the consumer group id.
	Group string
	// Kind says what the entry is about.
	Kind Kind
	// Generation is the generation (KIP-848: group epoch) the entry
	// belongs to; 0 when it belongs to none.
	Generation int32
	// Member is the member id the entry is about, "" when none.
	Member string
	// Text is the human sentence, without time and group.
	Text string
	// Detail holds the summary block of a stable generation, one line each.
	Detail []string
	// Fields are the structured facts, snake_case keys, JSON-friendly
	// values (strings, numbers, bools, string slices, maps), for output:
	// logs and JSONL. Programs read the typed facts below.
	Fields map[string]any

	// The facts programs that take entries read (the per-group metrics,
	// the web page's list of failed requests), typed, each on its kinds
	// only; Fields repeats them for output.
	Stable  *StableFacts  // stable
	Commit  *CommitFacts  // commit
	Suspect *SuspectFacts // suspect_commit
	Failure *FailureFacts // error, fenced

	loc *time.Location
}

// StableFacts are what a stable entry says of the generation that formed.
type StableFacts struct {
	// Trigger is what moved the group out of Stable (TriggerReport.Kind).
	Trigger string
	// StopTheWorld is how long the group stopped (StopTheWorldMs); -1
	// unknown.
	StopTheWorld time.Duration
	// Members is how many members the generation has.
	Members int
}

// CommitFacts are what a commit entry says of its result.
type CommitFacts struct {
	// DuringRevocation: a commit made while its member's partitions were
	// being revoked (else a failed commit outside a rebalance).
	DuringRevocation bool
	// Responded: the coordinator's answer was seen; Failed: it refused
	// some partitions, with Errors (distinct error names, sorted; empty
	// when the whole request failed without per-partition codes).
	Responded, Failed bool
	Errors            []string
}

// SuspectFacts are why a commit is suspect: "not_owned" and/or
// "backwards".
type SuspectFacts struct {
	Reasons []string
}

// FailureFacts are the request a failed-request entry (error, fenced)
// names: its API ("" when the entry is not about one request) and the
// error's name.
type FailureFacts struct {
	API, Error string
}

// Line renders the entry in the console form:
// "14:02:11.204 test_group_1   commit during revocation ...".
func (e Entry) Line() string {
	var b strings.Builder
	e.writeLine(&b)
	return b.String()
}

// writeLine writes Line to b.
func (e Entry) writeLine(b *strings.Builder) {
	loc := e.loc
	if loc == nil {
		loc = time.UTC
	}
	var buf [16]byte
	b.Write(e.At.In(loc).AppendFormat(buf[:0], "15:04:05.000")) // clock, without a string
	b.WriteByte(' ')
	// Ids and names are the clients' choice: escaped (printable), so that
	// none can start a line of its own or reach the terminal.
	b.WriteString(printable.String(e.Group))
	b.WriteByte(' ')
	if subKinds[e.Kind] {
		b.WriteString("  ")
	}
	b.WriteString(printable.String(e.Text))
}

// Lines renders Line followed by the Detail lines, indented.
func (e Entry) Lines() []string {
	out := make([]string, 0, 1+len(e.Detail))
	out = append(out, e.Line())
	for _, d := range e.Detail {
		out = append(out, "    "+printable.String(d))
	}
	return out
}

// ZapFields returns the entry's structured fields for a zap logger, with
// the snake_case keys used across kproxy: group, kind, generation,
// member_id, at, then Fields sorted by key, and detail.
func (e Entry) ZapFields() []zap.Field {
	fs := make([]zap.Field, 0, 6+len(e.Fields)) // but for a cut field's count
	fs = append(fs,
		zap.String("group", e.Group),
		zap.String("kind", string(e.Kind)),
		zap.Time("at", e.At),
	)
	if e.Generation != 0 {
		fs = append(fs, zap.Int32("generation", e.Generation))
	}
	if e.Member != "" {
		fs = append(fs, zap.String("member_id", e.Member))
	}
	var keys [16]string // on the stack for most entries
	ks := slices.AppendSeq(keys[:0], maps.Keys(e.Fields))
	slices.Sort(ks)
	for _, k := range ks {
		v, more := summarisedField(e.Fields[k])
		fs = append(fs, zap.Any(k, v))
		if more > 0 {
			fs = append(fs, zap.Int(k+"_more", more))
		}
	}
	if len(e.Detail) > 0 {
		fs = append(fs, zap.Strings("detail", e.Detail))
	}
	return fs
}

// sortedKeys returns m's keys in order, so output never depends on map
// iteration order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
