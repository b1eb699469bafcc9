package synth

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// fetchPath runs one round of the group's fetch path traffic at about at:
// members whose metadata is due refresh it, and now and then a short-lived
// client (a producer or a tool) connects, learns versions and metadata of
// the group's topics, and goes.
func (t *Traffic) fetchPath(g *group, at time.Time) {
	if !t.mix.fetchPath {
		return
	}
	for _, m := range g.members {
		if m.refreshLeft--; m.refreshLeft <= 0 {
			m.refreshLeft = t.rounds(t.mix.refreshEvery)
			t.metadata(g, &m.boot, at.Add(t.jitter(t.opts.Heartbeat)))
		}
	}
	// visitPercent is the chance of a visit per default round: a longer
	// round has that many more, the whole ones for sure.
	for chance := int(int64(t.mix.visitPercent) * int64(t.opts.Heartbeat) / int64(heartbeatEvery)); chance > 0; chance -= 100 {
		if chance < 100 && t.rng.IntN(100) >= chance {
			break
		}
		n := t.host()
		c := t.conn(n, fmt.Sprintf("producer-%d", n), -1)
		start := at.Add(t.jitter(t.opts.Heartbeat))
		t.apiVersions(&c, start)
		t.metadata(g, &c, start.Add(5*time.Millisecond))
	}
}

// apiVersionsResponse is the encoded body of the answer to an
// ApiVersions request at vApiVersions: every API kmsg knows, at its newest
// version, as a current broker answers.
var apiVersionsResponse = func() []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(vApiVersions)
	for key := range int16(100) {
		if req := kmsg.RequestForKey(key); req != nil {
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MaxVersion = key, req.MaxVersion()
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
	}
	return resp.AppendTo(nil)
}()

// apiVersionsRequest is every client's ApiVersions request, at
// vApiVersions.
var apiVersionsRequest = func() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(vApiVersions)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1.19.5"
	return req
}()

func (t *Traffic) apiVersions(c *client, at time.Time) {
	latency := t.latency()
	c.corr++
	corr := c.corr
	t.emit(at.Add(latency), func(e *encoder) *decode.Exchange {
		response := append(e.responseHeader(corr, int16(kmsg.ApiVersions), false), apiVersionsResponse...)
		return e.exchange(c, apiVersionsRequest, response, corr, at, latency)
	})
}

// metadata asks for the group's topics: the answer lists the brokers and
// each partition's leader, replicas and in-sync replicas. Both frames are
// encoded when Next returns the exchange, from the group's topics, which
// never change.
func (t *Traffic) metadata(g *group, c *client, at time.Time) {
	topics := g.topics
	latency := t.latency()
	c.corr++
	corr := c.corr
	t.emit(at.Add(latency), func(e *encoder) *decode.Exchange {
		req, resp := e.metadata(topics)
		return e.exchange(c, req, resp.AppendTo(e.responseHeader(corr, resp.Key(), resp.IsFlexible())), corr, at, latency)
	})
}

// metadata is the Metadata request for topics, at vMetadata, and its
// answer, in e's scratch values.
func (e *encoder) metadata(topics []topic) (*kmsg.MetadataRequest, *kmsg.MetadataResponse) {
	req, resp := &e.metadataRequest, &e.metadataResponse
	if resp.Brokers == nil {
		*req, *resp = kmsg.NewMetadataRequest(), kmsg.NewMetadataResponse()
		req.SetVersion(vMetadata)
		resp.SetVersion(vMetadata)
		for b := range int32(brokers) {
			br := kmsg.NewMetadataResponseBroker()
			rack := fmt.Sprintf("az-%d", b)
			br.NodeID, br.Host, br.Port, br.Rack = b, brokerHost(b), 9092, &rack
			resp.Brokers = append(resp.Brokers, br)
		}
		cluster := "synthetic-cluster"
		resp.ClusterID, resp.ControllerID = &cluster, 0
	}
	req.Topics = req.Topics[:0]
	resp.Topics = slices.Grow(resp.Topics[:0], len(topics))[:len(topics)]
	for i := range topics {
		tp := &topics[i]
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &tp.name
		req.Topics = append(req.Topics, rt)
		partitions := resp.Topics[i].Partitions[:0] // the scratch's room, reused
		st := kmsg.NewMetadataResponseTopic()
		st.Topic, st.TopicID = &tp.name, tp.id
		for p := range tp.partitions {
			sp := kmsg.NewMetadataResponseTopicPartition()
			replicas := replicaSets[p%brokers]
			sp.Partition, sp.Leader, sp.LeaderEpoch = p, replicas[0], 7
			sp.Replicas, sp.ISR = replicas, replicas
			partitions = append(partitions, sp)
		}
		st.Partitions = partitions
		resp.Topics[i] = st
	}
	return req, resp
}

// replicaSets are the replicas of a partition p, by p modulo brokers: a
// leader and the brokers after it.
var replicaSets = func() (sets [brokers][]int32) {
	for p := range int32(brokers) {
		sets[p] = []int32{p % brokers, (p + 1) % brokers, (p + 2) % brokers}
	}
	return sets
}()

// brokerHost is the advertised host of a broker.
func brokerHost(node int32) string {
	return fmt.Sprintf("broker-%d.kafka.internal", node)
}
