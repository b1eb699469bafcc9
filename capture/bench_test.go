package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/capture/pcapsynth"
	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/timeline"
)

// benchCapture is a capture of the realistic mix: the group traffic of
// kproxy-journalgen's generator (200 groups) for groupBytes of frames,
// with Produce requests and Fetch responses of 1 MiB each, alternately,
// every few milliseconds, making payload about payloadShare of the
// capture's bytes, as on a busy cluster; segments of mss bytes.
func benchCapture(b *testing.B, mss, groupBytes int) []byte {
	b.Helper()
	const (
		payload      = 1 << 20
		payloadShare = 0.95
	)
	tr := synth.New(synth.Options{Seed: 1, Groups: 200})
	var xs []*decode.Exchange
	var size int
	for size < groupBytes {
		x := tr.Next()
		xs = append(xs, x)
		size += len(x.Request) + len(x.Response) + 8
	}
	inWireOrder(xs)
	first, last := xs[0].RequestAt, xs[len(xs)-1].ResponseAt
	share := payloadShare
	n := int(float64(groupBytes) * share / (1 - share) / payload)
	step := last.Sub(first) / time.Duration(n+1)
	fetch := fetchRequest()
	for i := range n {
		at := first.Add(step * time.Duration(i+1))
		x := &decode.Exchange{ConnID: 1<<40 + uint64(i%16), ClientAddr: fmt.Sprintf("10.9.0.%d:40000", i%16), BrokerID: int32(i % 3),
			CorrelationID: int32(i), RequestAt: at, ResponseAt: at.Add(2 * time.Millisecond)}
		if i%2 == 0 {
			x.APIKey, x.APIVersion = 0, 9
			x.Request, x.Response = producePayload(payload), []byte{0, 0, 0, 7, 0}
		} else {
			x.APIKey, x.APIVersion = 1, 12
			x.Request, x.Response = fetch, append(make([]byte, 0, payload), bytes.Repeat([]byte{0x43}, payload)...)
		}
		binary.BigEndian.PutUint32(x.Request[4:], uint32(i))
		binary.BigEndian.PutUint32(x.Response, uint32(i))
		x.Request = bytes.Clone(x.Request)
		xs = append(xs, x)
	}
	sortByCompletion(xs)
	var buf bytes.Buffer
	w, err := pcapsynth.NewWriter(&buf, pcapsynth.Pcap)
	if err != nil {
		b.Fatal(err)
	}
	w.MSS, w.Acks = mss, true
	if err := pcapsynth.WriteExchanges(w, xs, pcapsynth.ExchangeOptions{}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// inWireOrder moves requests that the generator sent on a connection
// before an earlier-answered one to just after it: a broker answers the
// requests of a connection in order, which the generator, writing
// journals, does not need to keep.
func inWireOrder(xs []*decode.Exchange) {
	last := map[uint64]time.Time{}
	for _, x := range xs {
		if l, ok := last[x.ConnID]; ok && !x.RequestAt.After(l) && x.Response != nil {
			x.RequestAt = l.Add(time.Microsecond)
			if !x.ResponseAt.After(x.RequestAt) {
				x.ResponseAt = x.RequestAt.Add(time.Microsecond)
			}
		}
		if x.Response != nil {
			last[x.ConnID] = x.RequestAt
		}
	}
}

// cpuTime is the CPU time the process used so far, user and system: on a
// shared machine it varies less with the other load than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sortByCompletion puts exchanges in the order a journal holds them.
func sortByCompletion(xs []*decode.Exchange) {
	done := func(x *decode.Exchange) time.Time {
		if x.Response == nil {
			return x.RequestAt
		}
		return x.ResponseAt
	}
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && done(xs[j]).Before(done(xs[j-1])); j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

// fetchRequest is a consumer's Fetch v12 request frame for 3 partitions.
func fetchRequest() []byte {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 500, 1, 50<<20
	t := kmsg.NewFetchRequestTopic()
	t.Topic = "orders"
	for p := range int32(3) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, 1000, 1<<20
		t.Partitions = append(t.Partitions, fp)
	}
	req.Topics = append(req.Topics, t)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("consumer-1")).AppendRequest(nil, req, 0)[4:]
}

// BenchmarkRead measures a Source reading a capture of the realistic mix
// held in memory, exchanges handed out and dropped (BenchmarkStory adds
// the pipeline): MB/s is bytes of capture per second. mss=65483 is
// loopback's segments, and what a capture on a host with GRO/TSO shows of
// a busy connection; mss=1448 is Ethernet's without them, many more
// packets for the same bytes.
//
//	GOMAXPROCS=1 go test ./capture -run '^$' -bench BenchmarkRead -benchtime 5x
func BenchmarkRead(b *testing.B) {
	for _, mss := range []int{65483, 1448} {
		b.Run(fmt.Sprintf("mss=%d", mss), func(b *testing.B) {
			capture := benchCapture(b, mss, 12<<20)
			b.SetBytes(int64(len(capture)))
			b.ReportAllocs()
			runtime.GC()
			var st Stats
			cpu := cpuTime()
			for b.Loop() {
				st = readAll(b, capture, nil)
			}
			b.ReportMetric(float64(len(capture))*float64(b.N)/1e6/(cpuTime()-cpu).Seconds(), "MB/cpu-s")
			b.ReportMetric(float64(st.Packets), "packets")
			b.ReportMetric(float64(st.Exchanges), "exchanges")
		})
	}
}

// BenchmarkReadMemory measures what a Source holds while it reads captures
// of the realistic mix of two lengths, the second of twice as much traffic:
// the live heap beyond the capture itself, after a collection every 8,192
// exchanges (live-MB, the largest seen), which must not grow with the
// capture's length.
//
//	go test ./capture -run '^$' -bench BenchmarkReadMemory -benchtime 1x
func BenchmarkReadMemory(b *testing.B) {
	for _, groupMB := range []int{12, 24} {
		b.Run(fmt.Sprintf("group-MB=%d", groupMB), func(b *testing.B) {
			capture := benchCapture(b, 65483, groupMB<<20)
			live := func() uint64 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			base := live()
			var peak uint64
			for b.Loop() {
				readAll(b, capture, func(n int) {
					if n%8192 == 0 {
						peak = max(peak, live())
					}
				})
			}
			b.ReportMetric(float64(len(capture))/1e6, "capture-MB")
			b.ReportMetric(float64(peak-min(peak, base))/1e6, "live-MB")
		})
	}
}

// readAll reads capture with a Source to the end, calling each (when set)
// with the count of exchanges read so far, and returns the Source's stats;
// it fails unless exchanges were read and none lost.
func readAll(b *testing.B, capture []byte, each func(n int)) Stats {
	src, err := NewSource(Config{}, []string{"bench"}, []io.Reader{bytes.NewReader(capture)})
	if err != nil {
		b.Fatal(err)
	}
	for n := 0; ; n++ {
		_, _, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if each != nil {
			each(n)
		}
	}
	st := src.Stats()
	if st.Lost != 0 || st.Exchanges == 0 {
		b.Fatalf("stats %+v: want exchanges and none lost", st)
	}
	return st
}

// BenchmarkStory measures replay --pcap's work on the capture of
// BenchmarkRead (64 KiB segments): the Source, then the pipeline decoding
// the exchanges into a streaming timeline, as replay --format text
// --findings=false runs them (without writing the entries).
//
//	GOMAXPROCS=1 go test ./capture -run '^$' -bench BenchmarkStory -benchtime 5x
func BenchmarkStory(b *testing.B) {
	capture := benchCapture(b, 65483, 12<<20)
	b.SetBytes(int64(len(capture)))
	b.ReportAllocs()
	runtime.GC()
	cpu := cpuTime()
	for b.Loop() {
		src, err := NewSource(Config{}, []string{"bench"}, []io.Reader{bytes.NewReader(capture)})
		if err != nil {
			b.Fatal(err)
		}
		eng := timeline.NewRetaining(timeline.Config{OnEntry: func(timeline.Entry) {}}, timeline.StreamRetention)
		pl := pipeline.New(pipeline.Config{Events: []pipeline.EventConsumer{eng}, Batch: 32})
		if err := pl.Run(context.Background(), src); err != nil {
			b.Fatal(err)
		}
		eng.Close(time.Time{})
	}
	b.ReportMetric(float64(len(capture))*float64(b.N)/1e6/(cpuTime()-cpu).Seconds(), "MB/cpu-s")
}
