package decode

import (
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Test helpers that build frames the way a client and a broker do: kmsg
// bodies behind hand-built headers (request header v1, or v2 when the
// version is flexible; response header v0, or v1 when flexible, except
// ApiVersions whose response header is always v0). Frames carry no size
// prefix, as in an Exchange.

var (
	testClientID = "consumer-a-1"
	testAt       = time.Date(2026, 1, 2, 3, 4, 5, 6000000, time.UTC)
	testRespAt   = testAt.Add(3 * time.Millisecond)
)

// requestFrame is req behind its request header.
func requestFrame(req kmsg.Request, corr int32) []byte {
	b := kbin.AppendInt16(nil, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, &testClientID)
	if req.IsFlexible() {
		b = append(b, 0) // empty tag section
	}
	return req.AppendTo(b)
}

// responseFrame is resp behind its response header.
func responseFrame(resp kmsg.Response, corr int32) []byte {
	b := kbin.AppendInt32(nil, corr)
	if resp.IsFlexible() && resp.Key() != 18 {
		b = append(b, 0)
	}
	return resp.AppendTo(b)
}

// exchange frames req and resp (nil for no response) at the version req
// has, as the proxy would hand them over.
func exchange(req kmsg.Request, resp kmsg.Response) *Exchange {
	const corr = 1234
	x := &Exchange{
		ConnID:        42,
		ClientAddr:    "127.0.0.1:50123",
		BrokerID:      1,
		APIKey:        req.Key(),
		APIVersion:    req.GetVersion(),
		CorrelationID: corr,
		ClientID:      testClientID,
		RequestAt:     testAt,
		Request:       requestFrame(req, corr),
	}
	if resp != nil {
		resp.SetVersion(req.GetVersion())
		x.Response = responseFrame(resp, corr)
		x.ResponseAt = testRespAt
	}
	return x
}

func ptr[T any](v T) *T { return &v }

// Embedded protocol builders.

func subscription(version int16, topics []string, owned []kmsg.ConsumerMemberMetadataOwnedPartition, gen int32, rack *string, userData []byte) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = version
	m.Topics = topics
	m.OwnedPartitions = owned
	m.Generation = gen
	m.Rack = rack
	m.UserData = userData
	return m.AppendTo(nil)
}

func owned(topic string, partitions ...int32) kmsg.ConsumerMemberMetadataOwnedPartition {
	return kmsg.ConsumerMemberMetadataOwnedPartition{Topic: topic, Partitions: partitions}
}

func stickyUserData(gen int32, current ...kmsg.StickyMemberMetadataCurrentAssignment) []byte {
	m := kmsg.NewStickyMemberMetadata()
	m.Generation = gen
	m.CurrentAssignment = current
	return m.AppendTo(nil)
}

func current(topic string, partitions ...int32) kmsg.StickyMemberMetadataCurrentAssignment {
	return kmsg.StickyMemberMetadataCurrentAssignment{Topic: topic, Partitions: partitions}
}

func assignment(version int16, topics ...kmsg.ConsumerMemberAssignmentTopic) []byte {
	m := kmsg.NewConsumerMemberAssignment()
	m.Version = version
	m.Topics = topics
	return m.AppendTo(nil)
}

func assigned(topic string, partitions ...int32) kmsg.ConsumerMemberAssignmentTopic {
	return kmsg.ConsumerMemberAssignmentTopic{Topic: topic, Partitions: partitions}
}

func connectMetadata(version int16, url string, offset int64) []byte {
	m := kmsg.NewConnectMemberMetadata()
	m.Version = version
	m.URL = url
	m.ConfigOffset = offset
	if version >= 1 {
		m.CurrentAssignment = []byte{}
	}
	return m.AppendTo(nil)
}

func topicID(b byte) [16]byte {
	var id [16]byte
	for i := range id {
		id[i] = b + byte(i)
	}
	return id
}
