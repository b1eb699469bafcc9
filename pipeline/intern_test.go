package pipeline

import (
	"context"
	"strings"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// offsetCommit is an OffsetCommit v8 exchange of member m-1 committing
// partition 0 of topic t, answered without error.
func offsetCommit(corr int32, sec int, t string) *decode.Exchange {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.MemberID, req.Generation = "g", "m-1", 3
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = t
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = int64(corr)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.SetVersion(8)
	st := kmsg.NewOffsetCommitResponseTopic()
	st.Topic = t
	st.Partitions = append(st.Partitions, kmsg.NewOffsetCommitResponseTopicPartition())
	resp.Topics = append(resp.Topics, st)
	return exchange(req, resp, corr, sec)
}

// offsetFetch is an OffsetFetch v7 exchange answering offset 5 for
// partition 0 of topic t.
func offsetFetch(corr int32, sec int, t string) *decode.Exchange {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group = "g"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = t, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.SetVersion(7)
	st := kmsg.NewOffsetFetchResponseTopic()
	st.Topic = t
	sp := kmsg.NewOffsetFetchResponseTopicPartition()
	sp.Offset = 5
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	return exchange(req, resp, corr, sec)
}

// keepTopics keeps the topic names of the commits and offset fetches it
// is handed, as the timeline does.
type keepTopics struct{ topics []string }

func (k *keepTopics) AddEvents(events []decode.Event) {
	for _, ev := range events {
		if oc := ev.OffsetCommit; oc != nil {
			for _, t := range oc.Topics {
				k.topics = append(k.topics, t.Topic)
			}
		}
		if of := ev.OffsetFetch; of != nil {
			for _, t := range of.Offsets {
				k.topics = append(k.topics, t.Topic)
			}
		}
	}
}

// TestInternTopics: the topic names of commits and offset fetches reach
// the consumers as one shared copy of each, not the decoder's copy per
// frame.
func TestInternTopics(t *testing.T) {
	var k keepTopics
	xs := []*decode.Exchange{offsetCommit(1, 1, "orders"), offsetCommit(2, 2, "orders"), offsetFetch(3, 3, "orders")}
	if err := New(Config{Events: []EventConsumer{&k}}).Run(context.Background(), Slice(xs)); err != nil {
		t.Fatal(err)
	}
	if len(k.topics) != 3 {
		t.Fatalf("got %d topics kept; want 3", len(k.topics))
	}
	want := unsafe.StringData(k.topics[0])
	for i, s := range k.topics {
		if s != "orders" || unsafe.StringData(s) != want {
			t.Errorf("topic %d: got %q at %p; want %q at %p, the first one's copy", i, s, unsafe.StringData(s), "orders", want)
		}
	}

	// The copy kept is not a view of the event's allocation of strings,
	// which it would keep alive.
	block := strings.Repeat("x", 100) + "orders"
	evs := []decode.Event{{OffsetCommit: &decode.OffsetCommit{Topics: []decode.CommitTopic{{Topic: block[100:]}}}}}
	internTopics(evs)
	if got := evs[0].OffsetCommit.Topics[0].Topic; got != "orders" || unsafe.StringData(got) == unsafe.StringData(block[100:]) {
		t.Errorf("interned %q shares the event's allocation", got)
	}
}
