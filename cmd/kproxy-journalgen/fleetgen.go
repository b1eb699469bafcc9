package main

import (
	"container/heap"
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
// spread over the heartbeat interval that follows (Kafka's default
// fetch.max.wait.ms, 500 ms, against a 3 s heartbeat: 6 for an idle
// consumer), each an incremental fetch-session request naming one
// partition. Exchanges come out in the order a proxy observes them, by
// completion time.
type fleetTraffic struct {
	tr                  *synth.Traffic
	instances           int
	fetchesPerHeartbeat int
	next1               *decode.Exchange // the synth traffic's next exchange, peeked
	fetches             fetchHeap        // Fetch requests to come, by time
	corr                int32
}

// fleetExchange is an exchange and the instance that observed it.
type fleetExchange struct {
	x        *decode.Exchange
	instance int
}

// next returns the next exchange and its instance.
func (f *fleetTraffic) next() fleetExchange {
	if f.next1 == nil {
		f.next1 = f.tr.Next()
	}
	x := f.next1
	if len(f.fetches) > 0 && f.fetches[0].RequestAt.Before(x.CompletedAt()) {
		x = heap.Pop(&f.fetches).(*decode.Exchange)
	} else {
		f.next1 = nil
		if x.APIKey == int16(kmsg.Heartbeat) {
			for i := range f.fetchesPerHeartbeat {
				at := x.ResponseAt.Add(time.Duration(i+1) * 3 * time.Second / time.Duration(f.fetchesPerHeartbeat+1))
				heap.Push(&f.fetches, f.fetch(x, at))
			}
		}
	}
	return fleetExchange{x: x, instance: instanceOf(x.ClientAddr, f.instances)}
}

// fetchHeap orders Fetch exchanges by request time (they have no
// response: their completion time).
type fetchHeap []*decode.Exchange

func (h fetchHeap) Len() int           { return len(h) }
func (h fetchHeap) Less(i, j int) bool { return h[i].RequestAt.Before(h[j].RequestAt) }
func (h fetchHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *fetchHeap) Push(x any)        { *h = append(*h, x.(*decode.Exchange)) }
func (h *fetchHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
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
