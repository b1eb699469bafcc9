package main

import (
	"hash/fnv"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
)

// fleetTraffic hands out synth traffic as a fleet of kproxy sidecars
// observes it: each client host goes through one instance (its sidecar),
// so the members of one group are spread over the instances. It adds the
// Fetch requests the synth traffic lacks and a real proxy publishes: after
// each Heartbeat, fetchesPerHeartbeat Fetch requests of the same client
// spread over the heartbeat interval before it (Kafka's default
// fetch.max.wait.ms, 500 ms, against a 3 s heartbeat: 6 for an idle
// consumer), each an incremental fetch-session request naming one
// partition.
type fleetTraffic struct {
	tr                  *synth.Traffic
	instances           int
	fetchesPerHeartbeat int
	pending             []fleetExchange
	corr                int32
}

// fleetExchange is an exchange and the instance that observed it.
type fleetExchange struct {
	x        *decode.Exchange
	instance int
}

// next returns the next exchange and its instance. Fetch requests added
// for a heartbeat come right after it, so the order by completion time is
// only approximate for them (they are at most one heartbeat interval
// earlier), as for an instance whose producer batches records.
func (f *fleetTraffic) next() fleetExchange {
	if len(f.pending) > 0 {
		e := f.pending[0]
		f.pending = f.pending[1:]
		return e
	}
	x := f.tr.Next()
	e := fleetExchange{x: x, instance: instanceOf(x.ClientAddr, f.instances)}
	if x.APIKey == int16(kmsg.Heartbeat) {
		for i := range f.fetchesPerHeartbeat {
			at := x.RequestAt.Add(-time.Duration(f.fetchesPerHeartbeat-i) * 3 * time.Second / time.Duration(f.fetchesPerHeartbeat))
			f.pending = append(f.pending, fleetExchange{x: f.fetch(x, at), instance: e.instance})
		}
	}
	return e
}

// instanceOf is the instance (0..n-1) a client host goes through.
func instanceOf(clientAddr string, n int) int {
	host, _, err := net.SplitHostPort(clientAddr)
	if err != nil {
		host = clientAddr
	}
	h := fnv.New32a()
	h.Write([]byte(host))
	return int(h.Sum32() % uint32(n))
}

// fetch is a Fetch request (v16: topic ids, fetch sessions) of hb's client
// sent at at, on the client's connection to broker 1, journaled as kproxy
// journals Fetch: the request only.
func (f *fleetTraffic) fetch(hb *decode.Exchange, at time.Time) *decode.Exchange {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(16)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 50<<20
	req.SessionID, req.SessionEpoch = int32(hb.ConnID), f.corr%1000+1
	t := kmsg.NewFetchRequestTopic()
	h := fnv.New64a()
	h.Write([]byte(hb.ClientID))
	sum := h.Sum64()
	for i := range 8 {
		t.TopicID[i] = byte(sum >> (8 * i))
	}
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes = int32(sum%12), int64(f.corr)*10, 1<<20
	p.CurrentLeaderEpoch, p.LastFetchedEpoch, p.LogStartOffset = 0, -1, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	f.corr++
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID(hb.ClientID))
	return &decode.Exchange{
		ConnID:        hb.ConnID<<8 | 1, // the client's connection to a partition leader, not the coordinator's
		ClientAddr:    hb.ClientAddr,
		BrokerID:      1,
		APIKey:        int16(kmsg.Fetch),
		APIVersion:    16,
		CorrelationID: f.corr,
		ClientID:      hb.ClientID,
		RequestAt:     at,
		Request:       formatter.AppendRequest(nil, req, f.corr)[4:],
	}
}
