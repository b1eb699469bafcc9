package diagnose

import (
	"fmt"
	"math"
	"time"
)

// Kind names what a Finding is about. The values are stable: they appear
// in JSON output and logs, and docs/diagnosis.md documents each one
// (TestDocListsEveryKind keeps the two in step).
type Kind string

// Finding kinds.
const (
	PollTimeoutEviction        Kind = "poll_timeout_eviction"       // evicted: its poll loop was slower than max.poll.interval.ms
	SessionTimeoutEviction     Kind = "session_timeout_eviction"    // evicted: no heartbeat within session.timeout.ms
	PollTimeoutWarning         Kind = "poll_timeout_warning"        // live: a member still has not rejoined after 2/3 of the rebalance timeout
	SessionTimeoutWarning      Kind = "session_timeout_warning"     // live: a member silent for 2/3 of its session timeout
	RollingRestart             Kind = "rolling_restart"             // a rollout of several instances, and what it cost
	StaticMemberFenced         Kind = "static_member_fenced"        // FENCED_INSTANCE_ID: a static member was replaced
	DuplicateInstanceID        Kind = "duplicate_instance_id"       // two live processes share one group.instance.id
	RebalanceLoop              Kind = "rebalance_loop"              // rebalances that keep starting each other (a storm)
	HeartbeatTooSlow           Kind = "heartbeat_too_slow"          // heartbeat interval a third of the session timeout or more
	TimeoutsMisordered         Kind = "timeouts_misordered"         // rebalance timeout not above the session timeout
	MixedAssignors             Kind = "mixed_assignors"             // members offer different assignors or protocol types
	HeterogeneousSubscriptions Kind = "heterogeneous_subscriptions" // members subscribe to different topics
	EagerLargeGroup            Kind = "eager_large_group"           // an eager assignor in a large group
	PartitionFlap              Kind = "partition_flap"              // a partition moved A→B→A
	PartitionUnowned           Kind = "partition_unowned"           // a partition nobody owned for long
	MemberWithoutPartitions    Kind = "member_without_partitions"   // a member assigned nothing
	FailedRevocationCommit     Kind = "failed_revocation_commit"    // a commit refused around a rebalance: offsets lost
	BackwardsCommit            Kind = "backwards_commit"            // a commit below the partition's last committed offset
	StaleOwnerCommit           Kind = "stale_owner_commit"          // a commit by a member that does not own the partition
	DuplicateWindow            Kind = "duplicate_window"            // records the next owner processes again at a handover
	StreamsMemberFenced        Kind = "streams_member_fenced"       // KIP-1071: a streams member was fenced, losing its tasks
	StreamsTasksUnassigned     Kind = "streams_tasks_unassigned"    // KIP-1071: tasks active on no live member for long
	StreamsWarmupStuck         Kind = "streams_warmup_stuck"        // KIP-1071: a warm-up task that never caught up
	FencingLoop                Kind = "fencing_loop"                // KIP-848: a member fenced again and again
	ReconciliationStuck        Kind = "reconciliation_stuck"        // KIP-848: a member long behind its group epoch
	MigrationStalled           Kind = "migration_stalled"           // KIP-848: a group mixed (classic and consumer members) for long
)

// Kinds is every kind, in the order docs/diagnosis.md documents them.
var Kinds = []Kind{
	PollTimeoutEviction, SessionTimeoutEviction, PollTimeoutWarning, SessionTimeoutWarning,
	RollingRestart, StaticMemberFenced, DuplicateInstanceID, RebalanceLoop,
	HeartbeatTooSlow, TimeoutsMisordered, MixedAssignors, HeterogeneousSubscriptions, EagerLargeGroup,
	PartitionFlap, PartitionUnowned, MemberWithoutPartitions,
	FailedRevocationCommit, BackwardsCommit, StaleOwnerCommit, DuplicateWindow,
	StreamsMemberFenced, StreamsTasksUnassigned, StreamsWarmupStuck,
	FencingLoop, ReconciliationStuck,
	MigrationStalled,
}

// Severity says how urgent a finding is.
type Severity string

// Severities.
const (
	// Critical: it cost the group a rebalance or records processed twice.
	Critical Severity = "critical"
	// Warning: it is costing or will cost something soon.
	Warning Severity = "warning"
	// Info: a configuration smell, harmless until something else happens.
	Info Severity = "info"
)

// Finding is one cause the engine names, with its evidence and advice.
// Field names are stable (docs/diagnosis.md).
type Finding struct {
	// ID identifies the finding within one input: kind, group, member (or
	// "-") and time. Links refer to it.
	ID       string   `json:"id"`
	Kind     Kind     `json:"kind"`
	Group    string   `json:"group"`
	Severity Severity `json:"severity"`
	// At is when the cause showed (RFC 3339, nanoseconds, UTC): the
	// eviction, the crossing of a warning threshold, the commit...
	At         string             `json:"at"`
	Members    []Member           `json:"members"`    // the members concerned, sorted by member id
	Partitions map[string][]int32 `json:"partitions"` // topic → partitions concerned; empty when none
	// Evidence holds the numbers behind the finding: durations in
	// milliseconds (keys ending in Ms), times in RFC 3339, counts.
	Evidence    map[string]any `json:"evidence"`
	Explanation string         `json:"explanation"` // what happened and why, in words
	Suggestion  string         `json:"suggestion"`  // what to change, per client library
	// Links are the IDs of related findings: an eviction links the warning
	// that preceded it.
	Links []string `json:"links,omitempty"`

	at     time.Time
	member string // the member the ID names, "-" for none
}

// Member is a group member as a finding names it.
type Member struct {
	MemberID   string `json:"memberId"`
	ClientID   string `json:"clientId"`
	InstanceID string `json:"instanceId"` // group.instance.id; "" for dynamic members
	ClientAddr string `json:"clientAddr"` // its connection to the coordinator
	// Who it is beyond its ids, each omitted when unknown: the client
	// software its connection announced in ApiVersions v3+ (KIP-511), the
	// rack it says it runs in (its subscription's, KIP-881, or its KIP-848
	// heartbeat's RackId), and the subject of the certificate it
	// presented when kproxy's listener asks for one (mutual TLS).
	SoftwareName    string `json:"clientSoftwareName,omitempty"`
	SoftwareVersion string `json:"clientSoftwareVersion,omitempty"`
	Rack            string `json:"rack,omitempty"`
	ClientCert      string `json:"clientCertSubject,omitempty"`
}

// newFinding returns a finding with its ID, time and empty collections
// set; member names the member the ID carries ("" for none).
func newFinding(kind Kind, group string, sev Severity, at time.Time, member string) Finding {
	if member == "" {
		member = "-"
	}
	return Finding{
		ID:   fmt.Sprintf("%s/%s/%s/%s", kind, group, member, stamp(at)),
		Kind: kind, Group: group, Severity: sev, At: stamp(at), at: at, member: member,
		Members: []Member{}, Partitions: map[string][]int32{}, Evidence: map[string]any{},
	}
}

// stamp renders t as the timeline does: RFC 3339 with nanoseconds, UTC.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// ms is d in milliseconds rounded to the microsecond, as every duration in
// the evidence, and as the timeline renders its durations.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}
