package proxy

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEndpointsRewrittenOnKfake: through kproxy, a Produce and a Fetch at
// the newest versions (KIP-951) sent to a broker that does not lead the
// partition are answered NOT_LEADER_OR_FOLLOWER with the
// leader's address, and that address is kproxy's listener for the leader,
// never the broker's own.
func TestEndpointsRewrittenOnKfake(t *testing.T) {
	const topic = "moved"
	cluster := startKfake(t, 3, kfake.SeedTopics(1, topic))
	p := startProxy(t, testConfig(cluster.ListenAddrs()...), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), dialFrom("127.0.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != 1 {
		t.Fatalf("metadata: %v %+v", err, mresp)
	}
	proxied := make(map[int32]string) // node -> the address kproxy gives for it
	for _, b := range mresp.Brokers {
		proxied[b.NodeID] = hostPort(b.Host, b.Port)
	}
	leader := mresp.Topics[0].Partitions[0].Leader
	other := (leader + 1) % 3
	topicID := mresp.Topics[0].TopicID

	checkEndpoints := func(t *testing.T, code int16, nodes map[int32]string) {
		t.Helper()
		if err := kerr.ErrorForCode(code); err != kerr.NotLeaderForPartition {
			t.Fatalf("error %v; want NOT_LEADER_OR_FOLLOWER", err)
		}
		if len(nodes) == 0 {
			t.Fatal("no endpoints in the answer")
		}
		for id, addr := range nodes {
			if addr != proxied[id] {
				t.Errorf("node %d at %s; want kproxy's %s", id, addr, proxied[id])
			}
			if slices.Contains(cluster.ListenAddrs(), addr) {
				t.Errorf("node %d at the broker's own address %s", id, addr)
			}
		}
	}

	t.Run("Produce", func(t *testing.T) {
		req := kmsg.NewPtrProduceRequest()
		req.Version = kmsg.NewPtrProduceResponse().MaxVersion()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = oneBatch(t)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(int(other)).RetriableRequest(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		pr := resp.(*kmsg.ProduceResponse)
		nodes := make(map[int32]string)
		for _, b := range pr.Brokers {
			nodes[b.NodeID] = hostPort(b.Host, b.Port)
		}
		checkEndpoints(t, pr.Topics[0].Partitions[0].ErrorCode, nodes)
	})
	t.Run("Fetch", func(t *testing.T) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = kmsg.NewPtrFetchResponse().MaxVersion()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 100, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(int(other)).RetriableRequest(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		fr := resp.(*kmsg.FetchResponse)
		nodes := make(map[int32]string)
		for _, b := range fr.Brokers {
			nodes[b.NodeID] = hostPort(b.Host, b.Port)
		}
		checkEndpoints(t, fr.Topics[0].Partitions[0].ErrorCode, nodes)
	})
	if st := p.Stats(); st.RewriteFailures != 0 || st.EndpointsDropped != 0 {
		t.Errorf("rewrite failures %d, endpoints dropped %d; want none", st.RewriteFailures, st.EndpointsDropped)
	}
}

// oneBatch is a record batch of one record, as a producer writes it.
func oneBatch(t *testing.T) []byte {
	t.Helper()
	rec := kmsg.NewRecord()
	rec.Value = []byte("v")
	batch := kmsg.NewRecordBatch()
	batch.Magic, batch.NumRecords = 2, 1
	batch.ProducerID, batch.ProducerEpoch, batch.FirstSequence = -1, -1, -1
	batch.Records = rec.AppendTo(nil)
	raw := batch.AppendTo(nil)
	// Length counts the bytes after itself (offset 8 on); the CRC-32C covers
	// those after it (attributes, offset 21 on).
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestLeadersMoveThroughProxy: a producer and a consumer seeded only with
// kproxy's address, at the newest Produce and Fetch versions, keep working
// while partition leaders move between brokers (answers carrying the new
// leaders' addresses, KIP-951), and never reach a broker directly.
func TestLeadersMoveThroughProxy(t *testing.T) {
	const topic, records, partitions = "moving", 3000, 3
	cluster := startKfake(t, 3, kfake.SeedTopics(partitions, topic))
	p := startProxy(t, testConfig(cluster.ListenAddrs()...), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), dialFrom("127.0.0.2"),
		kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), dialFrom("127.0.0.2"),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // move every partition's leader a few times while records flow
		defer wg.Done()
		for i := range 6 {
			time.Sleep(100 * time.Millisecond)
			for part := range int32(partitions) {
				cluster.MoveTopicPartition(topic, part, int32(i+int(part))%3)
			}
		}
	}()
	for i := range records {
		r := &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: recordValue(i)}
		if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	wg.Wait()
	seen := make(map[string]bool)
	for len(seen) < records {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(seen), records, err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)] = true })
	}
	for _, remote := range cluster.Accepted() {
		if host, _, _ := net.SplitHostPort(remote); host == "127.0.0.2" {
			t.Errorf("kfake accepted a connection from %s: a client bypassed kproxy", remote)
		}
	}
	if st := p.Stats(); st.RewriteFailures != 0 || st.CorrelationMismatches != 0 {
		t.Errorf("stats %+v: want no rewrite failures and no mismatches", st)
	}
}
