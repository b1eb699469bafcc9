package pipeline

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// request frames req as the proxy hands out a request without its
// response (as it does a Fetch request).
func request(req kmsg.Request, corr int32, sec int) *decode.Exchange {
	x := exchange(req, kmsg.ResponseForKey(req.Key()), corr, sec)
	x.Response, x.ResponseAt = nil, time.Time{}
	return x
}

// fetch is a consumer's Fetch v12 request for partition 0 of topic t at
// offset off.
func fetch(corr int32, sec int, t string, off int64) *decode.Exchange {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = t
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = off
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return request(req, corr, sec)
}

// apiVersions is an ApiVersions v3 request naming the client software.
func apiVersions(corr int32, sec int) *decode.Exchange {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1.18"
	return request(req, corr, sec)
}

type traceDecoded struct{ t *trace }

func (c traceDecoded) AddDecoded(d *decode.Decoded) {
	s := fmt.Sprintf("d%d:%d", d.X.CorrelationID, len(d.Events))
	if d.Fetch != nil {
		p := d.Fetch.Topics[0].Partitions[0]
		s += fmt.Sprintf(":fetch=%s/%d@%d", d.Fetch.Topics[0].Topic, p.Partition, p.FetchOffset)
	}
	if d.Software != (decode.ClientSoftware{}) {
		s += ":sw=" + d.Software.Name + "/" + d.Software.Version
	}
	c.t.seq = append(c.t.seq, s)
}

// TestDecodedConsumers: each exchange reaches the consumers of decoded
// exchanges after its events reached the consumers of events, whatever
// the batch; its Fetch request and client software come decoded; a Fetch
// request that does not decode comes without; exchanges before Since do
// not come.
func TestDecodedConsumers(t *testing.T) {
	bad := fetch(5, 5, "t", 9)
	bad.Request = bad.Request[:len(bad.Request)-3]
	tr := &trace{}
	p := New(Config{Batch: 32, Since: base.Add(2 * time.Second),
		Exchanges: []ExchangeConsumer{traceExchanges{tr}}, Events: []EventConsumer{traceEvents{tr}},
		Decoded: []DecodedConsumer{traceDecoded{tr}}})
	steps := []step{{x: heartbeat(1, 0, 1)}, {x: heartbeat(2, 0, 2)}, {x: fetch(3, 3, "t", 42)},
		{x: apiVersions(4, 4)}, {x: bad}}
	if err := p.Run(context.Background(), &scriptedSource{steps: steps}); err != nil {
		t.Fatal(err)
	}
	want := []string{"x1", "x2", "e2", "d2:1", "x3", "d3:0:fetch=t/0@42", "x4", "d4:0:sw=kgo/1.18", "x5", "d5:0"}
	if !slices.Equal(tr.seq, want) {
		t.Errorf("got %v; want %v", tr.seq, want)
	}
}
