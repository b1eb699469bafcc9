package decode

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchRequest is a consumer's Fetch request at version v for two
// partitions of one topic, named by name before v13 and by id from v13.
func fetchRequest(v int16) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID = -1
	req.ReplicaState.ID = -1
	req.SessionID, req.SessionEpoch = 7, 3
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = "orders", topicID(9)
	for _, p := range []struct {
		p   int32
		off int64
	}{{0, 120}, {2, 77}} {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset = p.p, p.off
		t.Partitions = append(t.Partitions, fp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

func TestDecodeFetchRequest(t *testing.T) {
	parts := []FetchPartition{{Partition: 0, FetchOffset: 120}, {Partition: 2, FetchOffset: 77}}
	cases := []struct {
		name    string
		version int16
		want    *FetchRequest
	}{
		{"v4 by name, no session", 4, &FetchRequest{ReplicaID: -1, SessionEpoch: -1, Topics: []FetchTopic{{Topic: "orders", Partitions: parts}}}},
		{"v11 with a session", 11, &FetchRequest{ReplicaID: -1, SessionID: 7, SessionEpoch: 3, Topics: []FetchTopic{{Topic: "orders", Partitions: parts}}}},
		{"v12 flexible", 12, &FetchRequest{ReplicaID: -1, SessionID: 7, SessionEpoch: 3, Topics: []FetchTopic{{Topic: "orders", Partitions: parts}}}},
		{"v13 by topic id", 13, &FetchRequest{ReplicaID: -1, SessionID: 7, SessionEpoch: 3, Topics: []FetchTopic{{TopicID: topicID(9), Partitions: parts}}}},
		{"v15 replica state", 15, &FetchRequest{ReplicaID: -1, SessionID: 7, SessionEpoch: 3, Topics: []FetchTopic{{TopicID: topicID(9), Partitions: parts}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := exchange(fetchRequest(c.version), nil)
			got, err := DecodeFetchRequest(x)
			if err != nil {
				t.Fatalf("DecodeFetchRequest: %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v; want %+v", got, c.want)
			}
		})
	}
}

func TestDecodeFetchRequestBadInput(t *testing.T) {
	good := exchange(fetchRequest(12), nil)
	cases := []struct {
		name string
		x    *Exchange
		want error
	}{
		{"not fetch", &Exchange{APIKey: 3, APIVersion: 12, Request: good.Request}, nil},
		{"version mismatch", &Exchange{APIKey: 1, APIVersion: 11, Request: good.Request}, ErrMismatch},
		{"truncated body", &Exchange{APIKey: 1, APIVersion: 12, Request: good.Request[:len(good.Request)-5]}, nil},
		{"short header", &Exchange{APIKey: 1, APIVersion: 12, Request: good.Request[:3]}, ErrShortFrame},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeFetchRequest(c.x)
			if err == nil {
				t.Fatal("got no error; want one")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("got %v; want %v", err, c.want)
			}
		})
	}
}

func TestDecodeClientSoftware(t *testing.T) {
	req := func(v int16, name, version string) *Exchange {
		r := kmsg.NewPtrApiVersionsRequest()
		r.SetVersion(v)
		r.ClientSoftwareName, r.ClientSoftwareVersion = name, version
		return exchange(r, nil)
	}
	cases := []struct {
		name   string
		x      *Exchange
		want   ClientSoftware
		wantOK bool
	}{
		{"v3 java", req(3, "apache-kafka-java", "3.7.0"), ClientSoftware{"apache-kafka-java", "3.7.0"}, true},
		{"v4 librdkafka", req(4, "librdkafka", "2.3.0"), ClientSoftware{"librdkafka", "2.3.0"}, true},
		{"v2 says nothing", req(2, "", ""), ClientSoftware{}, false},
		{"v3 empty", req(3, "", ""), ClientSoftware{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := DecodeClientSoftware(c.x)
			if err != nil {
				t.Fatalf("DecodeClientSoftware: %v", err)
			}
			if got != c.want || ok != c.wantOK {
				t.Errorf("got %+v %v; want %+v %v", got, ok, c.want, c.wantOK)
			}
		})
	}
}

// TestDecodeClientSoftwareBadInput: an ApiVersions request whose header
// does not match its exchange, or whose bytes are cut, is refused as a
// Fetch request is (readRequest).
func TestDecodeClientSoftwareBadInput(t *testing.T) {
	r := kmsg.NewPtrApiVersionsRequest()
	r.SetVersion(3)
	r.ClientSoftwareName, r.ClientSoftwareVersion = "kgo", "1.18"
	good := exchange(r, nil)
	cases := []struct {
		name string
		x    *Exchange
		want error
	}{
		{"not api versions", &Exchange{APIKey: 1, APIVersion: 3, Request: good.Request}, nil},
		{"version mismatch", &Exchange{APIKey: 18, APIVersion: 4, Request: good.Request}, ErrMismatch},
		{"fetch header", &Exchange{APIKey: 18, APIVersion: 12, Request: exchange(fetchRequest(12), nil).Request}, ErrMismatch},
		{"truncated body", &Exchange{APIKey: 18, APIVersion: 3, Request: good.Request[:len(good.Request)-3]}, nil},
		{"short header", &Exchange{APIKey: 18, APIVersion: 3, Request: good.Request[:3]}, ErrShortFrame},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sw, ok, err := DecodeClientSoftware(c.x)
			if err == nil {
				t.Fatalf("got %+v %v and no error; want an error", sw, ok)
			}
			if ok {
				t.Errorf("ok with error %v; want not ok", err)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("got %v; want %v", err, c.want)
			}
		})
	}
}
