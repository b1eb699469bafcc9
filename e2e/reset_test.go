//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bigTopic fills topic (one partition) with records of size bytes each,
// straight to the broker, and returns how many it wrote.
func bigTopic(t *testing.T, topic string, records, size int) {
	t.Helper()
	freshTopic(t, topic, 1, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokerAddr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(int32(size)+4096))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, records)
	for i := range recs {
		v := make([]byte, size)
		rand.Read(v) // incompressible, whatever the broker does
		copy(v, itoa(i)+":")
		recs[i] = &kgo.Record{Value: v}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("filling %s: %v", topic, err)
	}
}

// slowReader dials addr with a small receive buffer, so that a large
// response it does not read stays mostly in the sender's hands.
func slowReader(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	return c
}

// fetchAll is a Fetch v11 request (topic by name) for everything in
// partition 0 of topic, up to maxBytes, answered at once.
func fetchAll(topic string, maxBytes int32) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = maxBytes
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = 0
	p.FetchOffset = 0
	p.PartitionMaxBytes = maxBytes
	p.CurrentLeaderEpoch = -1
	p.LogStartOffset = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	ft.Partitions = append(ft.Partitions, p)
	req.Topics = append(req.Topics, ft)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("reset-reader")).AppendRequest(nil, req, 1)
}

// TestScenario11 is a broker reset mid-response: a client fetches a
// 48 MiB partition through kproxy and reads the response slowly, so that
// most of it is still in the broker when the broker is killed (SIGKILL).
// kproxy must count the response it could not finish as truncated, close
// that client rather than leave it waiting for the rest, stay up, and,
// once the broker is back on its data, serve clients again: a franz-go
// producer sending through kproxy across the crash loses nothing, and the
// whole partition reads back through kproxy.
func TestScenario11(t *testing.T) {
	if mode == "direct" {
		t.Skip("E2E_MODE=direct: the reset is seen through kproxy")
	}
	const (
		topic, canaryTopic = "reset-big", "reset-canary"
		records, size      = 48, 1 << 20
		canaryN            = 400
	)
	bigTopic(t, topic, records, size-100)
	freshTopic(t, canaryTopic, 1, "")
	k := startKproxyWith(t, false, brokerAddr, "--admin", proxyAdmin)
	bs := bootstrap(k)
	t.Cleanup(func() { brokerCmd(t, "resume") })

	canary := franzGo(t, "canary", "produce", "-bootstrap", bs, "-topic", canaryTopic, "-count", itoa(canaryN), "-every", "40ms")
	canary.waitFor(0, 30*time.Second, "started", func(e event) bool { return e.Name == "started" })

	c := slowReader(t, bs)
	defer c.Close()
	if _, err := c.Write(fetchAll(topic, 64<<20)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var prefix [4]byte
	if _, err := io.ReadFull(c, prefix[:]); err != nil {
		t.Fatalf("no response to the fetch: %v", err)
	}
	declared := int64(binary.BigEndian.Uint32(prefix[:]))
	if declared < records*(size/2) {
		t.Fatalf("the fetch response declares %d bytes; want the whole partition (%d records of %d bytes)", declared, records, size)
	}
	// Reading nothing more: kproxy stops reading from the broker once the
	// buffers between are full.
	time.Sleep(2 * time.Second)
	before := scrape(t, proxyAdmin)
	killed := time.Now()
	brokerCmd(t, "kill")

	got, err := io.Copy(io.Discard, c)
	t.Logf("client read %d of the %d bytes declared, then %v (%v after the kill)", got, declared, errOrEOF(err), time.Since(killed).Round(10*time.Millisecond))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("kproxy kept the client connection open 30 s after the broker died mid-response")
	}
	if got >= declared {
		t.Fatalf("the client read the whole response (%d bytes): the broker had finished before it was killed; nothing was tested", got)
	}
	after := scrape(t, proxyAdmin)
	if d := after["kproxy_truncated_frames_total"] - before["kproxy_truncated_frames_total"]; d < 1 {
		t.Errorf("kproxy_truncated_frames_total rose by %v; want at least 1 (the response cut mid-frame)", d)
	}
	if code, body, err := healthz(proxyAdmin); err != nil || code != 200 {
		t.Errorf("kproxy /healthz after the broker died: %d %q %v; want 200", code, body, err)
	}
	if k.proc.waitExit(0) {
		t.Fatalf("kproxy exited when the broker died\n%s", k.proc.tail())
	}

	brokerCmd(t, "resume")
	t.Logf("broker back %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	canary.waitDone(3 * time.Minute)
	ev := canary.waitFor(0, 0, "produced", func(e event) bool { return e.Name == "produced" })
	t.Logf("canary: %d sent, %d failed, p99 %.0f ms, max %.0f ms", ev.Count, ev.Failed, ev.P99ms, ev.MaxMs)
	if ev.Failed != 0 {
		t.Errorf("canary: %d records failed across the broker crash: %s", ev.Failed, ev.Error)
	}
	if distinct, _ := countDistinct(t, bs, canaryTopic, canaryN, 60*time.Second); distinct != canaryN {
		t.Errorf("canary: read back %d distinct records through kproxy; want %d", distinct, canaryN)
	}
	if distinct, _ := countDistinct(t, bs, topic, records, 60*time.Second); distinct != records {
		t.Errorf("%s: read back %d records through kproxy after the crash; want %d", topic, distinct, records)
	}
	k.stop()
}

// errOrEOF names how a read ended.
func errOrEOF(err error) string {
	if err == nil {
		return "EOF"
	}
	return err.Error()
}
