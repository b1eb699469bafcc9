package decode

import "github.com/twmb/franz-go/pkg/kmsg"

// Fetch (key 1), requests only. kproxy never decodes a Fetch response: it
// is the largest frame on the wire and is streamed to the client untouched.
// What the request says is enough to know how far each consumer has read:
// the fetch offset of a partition is the consumer's position, every record
// before it already handed to the application.
//
// Versions: v0–v3 name topics; v4 adds the isolation level; v7 adds fetch
// sessions (KIP-227: an incremental request lists only the partitions
// whose position changed, and ForgottenTopics); v9 the current leader
// epoch; v12 is flexible; v13 names topics by id instead of name (KIP-516);
// v15 moves ReplicaID into ReplicaState (KIP-903). kproxy clamps Fetch at
// v15 (proxy/policy.go).

// FetchRequest is what a Fetch request says about a consumer's position.
type FetchRequest struct {
	// ReplicaID is -1 for consumers; a broker's id for a follower.
	ReplicaID    int32
	SessionID    int32 // KIP-227 fetch session, 0 when none (v7+)
	SessionEpoch int32 // -1 for a full request without a session (v7+)
	Topics       []FetchTopic
}

// FetchTopic is one topic of a Fetch request.
type FetchTopic struct {
	Topic string
	// TopicID names the topic instead of Topic from v13; zero before.
	TopicID    TopicID `json:",omitzero"`
	Partitions []FetchPartition
}

// FetchPartition is one partition of a Fetch request.
type FetchPartition struct {
	Partition   int32
	FetchOffset int64 // the consumer's position: the next offset it wants
}

// DecodeFetchRequest decodes the request of a Fetch exchange. It does not
// look at the response, which kproxy never keeps. It fails on an exchange
// of another API, on a version above what kmsg knows, and on bad bytes.
func DecodeFetchRequest(x *Exchange) (*FetchRequest, error) {
	req := kmsg.NewPtrFetchRequest()
	if err := readRequest(x, req); err != nil {
		return nil, err
	}
	v := req.GetVersion()
	out := &FetchRequest{ReplicaID: req.ReplicaID, SessionID: req.SessionID, SessionEpoch: req.SessionEpoch,
		Topics: make([]FetchTopic, 0, len(req.Topics))}
	if v >= 15 {
		out.ReplicaID = req.ReplicaState.ID
	}
	for _, t := range req.Topics {
		ft := FetchTopic{Topic: t.Topic, Partitions: make([]FetchPartition, 0, len(t.Partitions))}
		if v >= 13 {
			ft.Topic, ft.TopicID = "", TopicID(t.TopicID)
		}
		for _, p := range t.Partitions {
			ft.Partitions = append(ft.Partitions, FetchPartition{Partition: p.Partition, FetchOffset: p.FetchOffset})
		}
		out.Topics = append(out.Topics, ft)
	}
	return out, nil
}
