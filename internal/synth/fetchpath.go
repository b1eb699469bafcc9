package synth

import (
	"bytes"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
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
			t.metadata(g, m.boot, at.Add(t.jitter(t.opts.Heartbeat)))
		}
	}
	// visitPercent is the chance of a visit per default round: a longer
	// round has that many more, the whole ones for sure.
	for chance := int(int64(t.mix.visitPercent) * int64(t.opts.Heartbeat) / int64(heartbeatEvery)); chance > 0; chance -= 100 {
		if chance < 100 && t.rng.IntN(100) >= chance {
			break
		}
		host, n := t.host()
		c := t.conn(host, fmt.Sprintf("producer-%d", n), -1)
		start := at.Add(t.jitter(t.opts.Heartbeat))
		t.apiVersions(c, start)
		t.metadata(g, c, start.Add(5*time.Millisecond))
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
	t.emit(c.exchangeEncoded(apiVersionsRequest, apiVersionsResponse, at, t.latency()))
}

// metadata asks for the group's topics: the answer lists the brokers and
// each partition's leader, replicas and in-sync replicas.
func (t *Traffic) metadata(g *group, c *client, at time.Time) {
	if g.metadata == nil { // neither the question nor the answer ever changes
		g.metadataRequest = kmsg.NewPtrMetadataRequest()
		g.metadataRequest.SetVersion(vMetadata)
		for _, tp := range g.topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = &tp.name
			g.metadataRequest.Topics = append(g.metadataRequest.Topics, rt)
		}
		g.metadata = bytes.Clone(metadataResponse(g).AppendTo(nil)) // without append's spare room
	}
	t.emit(c.exchangeEncoded(g.metadataRequest, g.metadata, at, t.latency()))
}

// metadataResponse is the answer to a Metadata request for g's topics, at
// vMetadata.
func metadataResponse(g *group) *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(vMetadata)
	for b := range int32(brokers) {
		br := kmsg.NewMetadataResponseBroker()
		rack := fmt.Sprintf("az-%d", b)
		br.NodeID, br.Host, br.Port, br.Rack = b, brokerHost(b), 9092, &rack
		resp.Brokers = append(resp.Brokers, br)
	}
	cluster := "synthetic-cluster"
	resp.ClusterID, resp.ControllerID = &cluster, 0
	for _, tp := range g.topics {
		st := kmsg.NewMetadataResponseTopic()
		st.Topic, st.TopicID = &tp.name, tp.id
		for p := range tp.partitions {
			sp := kmsg.NewMetadataResponseTopicPartition()
			replicas := []int32{p % brokers, (p + 1) % brokers, (p + 2) % brokers}
			sp.Partition, sp.Leader, sp.LeaderEpoch = p, replicas[0], 7
			sp.Replicas, sp.ISR = replicas, replicas
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// brokerHost is the advertised host of a broker.
func brokerHost(node int32) string {
	return fmt.Sprintf("broker-%d.kafka.internal", node)
}
