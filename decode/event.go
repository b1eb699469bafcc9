package decode

import "time"

// Event is one consumer-group fact decoded from an Exchange: one group's part
// of one request and its response. An exchange that concerns several groups
// (batched FindCoordinator v4+, OffsetFetch v8+) yields one Event per group.
// Exactly one of the API-specific pointers is set, matching APIKey.
type Event struct {
	// Facts copied from the exchange.
	At            time.Time // request time
	RespondedAt   time.Time // response time; zero without a response
	ConnID        uint64
	ClientAddr    string
	ClientID      string
	BrokerID      int32
	APIKey        int16
	APIVersion    int16
	CorrelationID int32

	// Group is the group id the event concerns ("" for Metadata and
	// EndTxn, which name no group).
	Group string

	FindCoordinator        *FindCoordinator        `json:",omitempty"`
	JoinGroup              *JoinGroup              `json:",omitempty"`
	SyncGroup              *SyncGroup              `json:",omitempty"`
	Heartbeat              *Heartbeat              `json:",omitempty"`
	LeaveGroup             *LeaveGroup             `json:",omitempty"`
	OffsetCommit           *OffsetCommit           `json:",omitempty"`
	OffsetFetch            *OffsetFetch            `json:",omitempty"`
	ConsumerGroupHeartbeat *ConsumerGroupHeartbeat `json:",omitempty"`
	TxnOffsetCommit        *TxnOffsetCommit        `json:",omitempty"`
	EndTxn                 *EndTxn                 `json:",omitempty"`
	ShareGroupHeartbeat    *ShareGroupHeartbeat    `json:",omitempty"`
	ShareFetch             *ShareFetch             `json:",omitempty"`
	ShareAcknowledge       *ShareAcknowledge       `json:",omitempty"`
	StreamsGroupHeartbeat  *StreamsGroupHeartbeat  `json:",omitempty"`
	StreamsGroupDescribe   *StreamsGroupDescribe   `json:",omitempty"`
	Metadata               *Metadata               `json:",omitempty"`
	Unobserved             *Unobserved             `json:",omitempty"`
}

// Unobserved stands for an exchange of interest whose request or response
// was too large for the proxy to keep (Exchange.Oversized): it happened, on
// this connection, but what it said is unknown; Group is "". A timeline
// counts it as something it could not see.
type Unobserved struct {
	// RequestSeen is set when the request was kept and only the response
	// was too large.
	RequestSeen bool
}

// Latency is the time from request to response, or 0 without a response.
func (e *Event) Latency() time.Duration {
	if e.RespondedAt.IsZero() {
		return 0
	}
	return e.RespondedAt.Sub(e.At)
}

// Responded reports whether the response was seen and decoded. When it is
// false, every response field of the API-specific event is its zero value.
func (e *Event) Responded() bool { return !e.RespondedAt.IsZero() }

// TopicPartitions is a topic and a sorted list of its partitions.
type TopicPartitions struct {
	Topic string
	// TopicID names the topic instead of Topic where the wire does so
	// (OffsetFetch v10 requests); zero otherwise.
	TopicID    TopicID `json:",omitzero"`
	Partitions []int32
}

// TopicIDPartitions is a topic id (KIP-516) and a sorted list of its
// partitions, as KIP-848 ConsumerGroupHeartbeat carries them.
type TopicIDPartitions struct {
	TopicID    TopicID
	Partitions []int32
}

// FindCoordinator is one key of a FindCoordinator exchange (key 10).
type FindCoordinator struct {
	KeyType   int8 // 0 group, 1 transaction, 2 share
	ErrorCode int16
	NodeID    int32
	Host      string
	Port      int32
}

// NamesNoGroup reports whether e's Group is a coordinator key that names
// no group: a transactional id or a share partition (KIP-98, KIP-932),
// which FindCoordinator also looks up.
func (e *Event) NamesNoGroup() bool {
	return e.FindCoordinator != nil && e.FindCoordinator.KeyType != 0
}

// JoinGroup is a JoinGroup exchange (key 11).
type JoinGroup struct {
	// Request.
	MemberID         string // "" on a first join
	InstanceID       string // group.instance.id, "" for dynamic members
	ProtocolType     string // "consumer", "connect", ...
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration // v1+; v0 uses SessionTimeout
	Reason           string        // v8+ (KIP-800)
	Protocols        []JoinProtocol

	// Response.
	ErrorCode        int16
	Generation       int32
	ProtocolName     string // chosen assignor; "" before v7 errors
	Leader           string
	AssignedMemberID string // the member id the coordinator gave this member
	SkipAssignment   bool   // v9+: a returning static leader must not reassign
	// Members is filled only in the leader's response.
	Members []JoinMember
}

// JoinProtocol is one protocol (assignor) a member offers in JoinGroup.
type JoinProtocol struct {
	Name string
	// Subscription is the decoded metadata for protocol type "consumer",
	// nil otherwise or when it did not decode.
	Subscription *Subscription
	// Connect is the decoded metadata for protocol type "connect".
	Connect *ConnectMetadata
	// Metadata is the raw protocol metadata, always kept.
	Metadata []byte
}

// JoinMember is one member listed in the leader's JoinGroup response.
type JoinMember struct {
	MemberID     string
	InstanceID   string
	Subscription *Subscription
	Connect      *ConnectMetadata
	Metadata     []byte
}

// Subscription is the consumer protocol's ConsumerProtocolSubscription.
type Subscription struct {
	Version int16
	Topics  []string
	// OwnedPartitions (v1+) is what a cooperative member still holds.
	OwnedPartitions []TopicPartitions
	Generation      int32 // v2+, -1 when absent
	Rack            string
	UserData        []byte
	// Sticky is set when UserData decodes as StickyMemberMetadata
	// (sticky and cooperative-sticky assignors).
	Sticky *StickyUserData
	// Streams is set when the assignor is Kafka Streams' "stream" and
	// UserData decodes as its SubscriptionInfo.
	Streams *StreamsSubscriptionInfo `json:",omitempty"`
}

// StickyUserData is the sticky assignors' user data: what the member owned
// and in which generation.
type StickyUserData struct {
	CurrentAssignment []TopicPartitions
	Generation        int32
}

// ConnectMetadata is the connect protocol's member metadata.
type ConnectMetadata struct {
	Version      int16
	URL          string
	ConfigOffset int64
}

// Assignment is the consumer protocol's ConsumerProtocolAssignment. A
// zero-length assignment decodes to an Assignment with no partitions.
type Assignment struct {
	Version    int16
	Partitions []TopicPartitions
	UserData   []byte
	// Streams is set when the assignor is Kafka Streams' "stream" and
	// UserData decodes as its AssignmentInfo.
	Streams *StreamsAssignmentInfo `json:",omitempty"`
}

// ConnectAssignment is the connect protocol's member assignment.
type ConnectAssignment struct {
	Version      int16
	Error        int16
	Leader       string
	LeaderURL    string
	ConfigOffset int64
	Connectors   []string
	Tasks        []string // "connector-task"
	// Revoked (v1+, incremental cooperative, KIP-415): what the member
	// must give up, in the same form.
	RevokedConnectors []string      `json:",omitempty"`
	RevokedTasks      []string      `json:",omitempty"`
	ScheduledDelay    time.Duration `json:",omitempty"` // v1+
}

// SyncGroup is a SyncGroup exchange (key 14).
type SyncGroup struct {
	// Request.
	MemberID     string
	InstanceID   string
	Generation   int32
	ProtocolType string // v5+; else remembered by the caller, see Decoder
	ProtocolName string // v5+
	// Plan is the leader's assignment plan; empty for followers.
	Plan []MemberAssignment

	// Response.
	ErrorCode int16
	// Assignment is this member's own assignment from the response.
	Assignment        *Assignment
	ConnectAssignment *ConnectAssignment
	RawAssignment     []byte
}

// MemberAssignment is one member's entry in the leader's SyncGroup plan.
type MemberAssignment struct {
	MemberID          string
	Assignment        *Assignment
	ConnectAssignment *ConnectAssignment
	Raw               []byte
}

// Heartbeat is a Heartbeat exchange (key 12).
type Heartbeat struct {
	MemberID   string
	InstanceID string
	Generation int32
	ErrorCode  int16
}

// LeaveGroup is a LeaveGroup exchange (key 13). Before v3 it names one
// member; from v3 it is batched.
type LeaveGroup struct {
	Members   []LeavingMember
	ErrorCode int16
}

// MemberError is the result for lv, one of lg's members: the response's
// top-level error when there is one (the whole request failed), else
// lv's own.
func (lg *LeaveGroup) MemberError(lv LeavingMember) int16 {
	if lg.ErrorCode != 0 {
		return lg.ErrorCode
	}
	return lv.ErrorCode
}

// LeavingMember is one member leaving in a LeaveGroup request.
type LeavingMember struct {
	MemberID   string
	InstanceID string
	Reason     string // v5+ (KIP-800)
	ErrorCode  int16  // v3+ per-member result
}

// OffsetCommit is an OffsetCommit exchange (key 8).
type OffsetCommit struct {
	MemberID   string
	InstanceID string
	Generation int32 // -1 for a simple (non-group) commit
	Topics     []CommitTopic
}

// CommitTopic is the commits for one topic.
type CommitTopic struct {
	Topic string
	// TopicID names the topic instead of Topic from v10; zero before.
	TopicID    TopicID `json:",omitzero"`
	Partitions []CommitPartition
}

// CommitPartition is one partition's committed offset and its result.
type CommitPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	ErrorCode   int16 // from the response; 0 without one
}

// TxnOffsetCommit is a TxnOffsetCommit exchange (key 28): offsets a
// transactional producer adds to its open transaction for a group member
// (consume-transform-produce, KIP-98 and KIP-447). They become the
// group's committed offsets only if the same producer's transaction
// commits (see EndTxn); an abort discards them.
type TxnOffsetCommit struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	// MemberID, InstanceID and Generation (KIP-848: the member epoch)
	// are v3+ (KIP-447): "", "" and -1 before, as for a producer that
	// does not name the consumer's group metadata.
	MemberID   string
	InstanceID string
	Generation int32
	// Topics are sorted by name, their partitions by number; ErrorCode
	// is the response's, 0 without one. From v6 topics are named by
	// TopicID only (KIP-1319), as OffsetCommit's are from v10.
	Topics []CommitTopic
}

// EndTxn is an EndTxn exchange (key 26): a transactional producer ends its
// transaction, committing or aborting it. Its event's Group is "": the
// transaction names its group only in its TxnOffsetCommits, matched by
// transactional id, producer id and epoch.
type EndTxn struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool // true commit, false abort
	// Response.
	ErrorCode int16
	// NextProducerID and NextProducerEpoch are what the producer uses for
	// its next transaction (v5+, KIP-890: the epoch is bumped at every
	// end); -1 before v5 or without a response.
	NextProducerID    int64
	NextProducerEpoch int16
}

// OffsetFetch is one group's part of an OffsetFetch exchange (key 9).
type OffsetFetch struct {
	MemberID    string // v9+
	MemberEpoch int32  // v9+
	// Topics requested; nil means all topics.
	Requested []TopicPartitions
	// Response.
	ErrorCode int16
	Offsets   []FetchedTopic
}

// FetchedTopic is the fetched offsets for one topic.
type FetchedTopic struct {
	Topic string
	// TopicID names the topic instead of Topic from v10; zero before.
	TopicID    TopicID `json:",omitzero"`
	Partitions []FetchedPartition
}

// FetchedPartition is one partition's committed offset as fetched.
type FetchedPartition struct {
	Partition int32
	Offset    int64
	ErrorCode int16
}

// ConsumerGroupHeartbeat is a KIP-848 ConsumerGroupHeartbeat exchange (key 68).
// Nil slices and pointers in the request mean "unchanged since the last
// heartbeat", as on the wire.
type ConsumerGroupHeartbeat struct {
	// Request.
	MemberID             string
	MemberEpoch          int32 // 0 join, -1 leave, -2 static leave
	InstanceID           *string
	RackID               *string
	RebalanceTimeout     time.Duration // -1 ms on the wire means unchanged: 0 here
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	ServerAssignor       *string
	OwnedPartitions      []TopicIDPartitions

	// Response.
	ErrorCode         int16
	ErrorMessage      string
	AssignedMemberID  string
	AssignedEpoch     int32
	HeartbeatInterval time.Duration
	// Assignment is nil when unchanged, empty when the member owns nothing.
	Assignment []TopicIDPartitions
}

// Metadata is the part of a Metadata response (key 3) the timeline needs:
// topic ids to names, for KIP-848 assignments. A Decoder remembers the
// Metadata of recent responses and gives the same *Metadata to every
// event of a response body it has seen before: it is read-only, and a
// caller must not modify it or its Topics.
type Metadata struct {
	Topics []MetadataTopic
}

// MetadataTopic is one topic in a Metadata response.
type MetadataTopic struct {
	Name       string
	TopicID    TopicID // zero before v10
	Partitions int32
	ErrorCode  int16
}
