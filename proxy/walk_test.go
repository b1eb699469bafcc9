package proxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// walkOver streams frame (with its size prefix) through a walker between
// two loopback TCP connections, as the response pump does, and returns what
// the client side received.
func walkOver(t *testing.T, frame []byte, key, version int16, mode copyMode) (out []byte, dropped bool, failure error) {
	t.Helper()
	brokerEnd, proxyUp := tcpPair(t)
	proxyDown, clientEnd := tcpPair(t)
	go brokerEnd.Write(frame)
	got := make(chan []byte, 1)
	go func() {
		clientEnd.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, len(frame))
		n, _ := io.ReadFull(clientEnd, b)
		got <- b[:n]
	}()
	br := bufio.NewReaderSize(readerOf(proxyUp), readBufSize)
	prefix, size, err := frameSize(br)
	if err != nil {
		t.Fatal(err)
	}
	w := newWalker(proxyDown, br, proxyUp, mode, prefix, size)
	shareFetch := key == int16(kmsg.ShareFetch)
	if shareFetch {
		w.keepSkeleton(len(frame))
	}
	dropped, failure = walkResponse(w, &fakeRouter{learned: make(map[int32]string)}, key, version)
	if w.err != nil {
		t.Fatalf("walk: %v", w.err)
	}
	if in := kmsg.NewPtrShareFetchResponse(); shareFetch && !w.bad {
		in.SetVersion(version)
		if err := in.ReadFrom(frame[9:]); err != nil {
			t.Fatalf("ShareFetch response does not parse: %v", err)
		}
		checkSkeleton(t, in, w.keep)
	}
	if w.written != int64(len(frame)) {
		t.Errorf("walker wrote %d bytes; want the frame's %d", w.written, len(frame))
	}
	return <-got, dropped, failure
}

// sized puts a response frame (header and body) behind its size prefix.
func sized(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// records returns n bytes standing for record batches (never decoded).
func records(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// fetchWith builds a Fetch response of two topics whose partitions carry
// record batches of the given sizes (-1: null), aborted transactions and
// partition tags, naming the given brokers.
func fetchWith(sizes []int, brokers map[int32]string) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SessionID = 7
	for ti := range 2 {
		topic := kmsg.NewFetchResponseTopic()
		topic.TopicID[0] = byte(ti + 1)
		for pi, n := range sizes {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(pi)
			p.HighWatermark = int64(1000 + pi)
			if n >= 0 {
				p.RecordBatches = records(n)
			}
			if pi == 1 {
				a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				a.ProducerID, a.FirstOffset = 9, 10
				p.AbortedTransactions = append(p.AbortedTransactions, a)
				p.ErrorCode = 6 // NOT_LEADER_OR_FOLLOWER
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 5
			}
			topic.Partitions = append(topic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, topic)
	}
	for id, host := range sortedBrokers(brokers) {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = id, host, 9092
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp
}

// produceWith builds a Produce response of two topics with the given
// number of partitions, one with record errors and its new leader, naming
// the given brokers.
func produceWith(partitions int, brokers map[int32]string) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	resp.ThrottleMillis = 3
	for ti := range 2 {
		topic := kmsg.NewProduceResponseTopic()
		topic.Topic = fmt.Sprintf("topic-%d", ti)
		topic.TopicID[0] = byte(ti + 1)
		for pi := range partitions {
			p := kmsg.NewProduceResponseTopicPartition()
			p.Partition, p.BaseOffset = int32(pi), int64(100*pi)
			if pi == 1 {
				msg := "not the leader"
				p.ErrorCode, p.ErrorMessage = 6, &msg
				e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				e.RelativeOffset, e.ErrorMessage = 2, &msg
				p.ErrorRecords = append(p.ErrorRecords, e)
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 5
			}
			topic.Partitions = append(topic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, topic)
	}
	for id, host := range sortedBrokers(brokers) {
		b := kmsg.NewProduceResponseBroker()
		b.NodeID, b.Host, b.Port = id, host, 9092
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp
}

// shareFetchWith is fetchWith for ShareFetch.
func shareFetchWith(sizes []int, brokers map[int32]string) *kmsg.ShareFetchResponse {
	resp := kmsg.NewPtrShareFetchResponse()
	resp.AcquisitionLockTimeoutMillis = 30000
	for ti := range 2 {
		topic := kmsg.NewShareFetchResponseTopic()
		topic.TopicID[0] = byte(ti + 1)
		for pi, n := range sizes {
			p := kmsg.NewShareFetchResponseTopicPartition()
			p.Partition = int32(pi)
			if n >= 0 {
				p.Records = records(n)
				a := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				a.FirstOffset, a.LastOffset, a.DeliveryCount = 0, int64(n), 1
				p.AcquiredRecords = append(p.AcquiredRecords, a)
			}
			if pi == 1 {
				msg := "not the leader"
				p.ErrorCode, p.ErrorMessage = 6, &msg
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 5
			}
			topic.Partitions = append(topic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, topic)
	}
	for id, host := range sortedBrokers(brokers) {
		b := kmsg.NewShareFetchResponseNodeEndpoint()
		b.NodeID, b.Host, b.Port = id, host, 9092
		resp.NodeEndpoints = append(resp.NodeEndpoints, b)
	}
	return resp
}

// sortedBrokers iterates brokers by node id.
func sortedBrokers(brokers map[int32]string) func(func(int32, string) bool) {
	return func(yield func(int32, string) bool) {
		for id := range int32(refusedNode + 1) {
			if host, ok := brokers[id]; ok && !yield(id, host) {
				return
			}
		}
	}
}

// endpointsOf returns the brokers a parsed Fetch or ShareFetch response
// names, as "id=host:port", and the response with them removed.
func endpointsOf(resp kmsg.Response) []string {
	var out []string
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for _, b := range r.Brokers {
			out = append(out, fmt.Sprintf("%d=%s", b.NodeID, hostPort(b.Host, b.Port)))
		}
		r.Brokers, r.UnknownTags = nil, kmsg.Tags{}
		if r.Version >= 13 { // names are not written from v13, topic ids before
			for i := range r.Topics {
				r.Topics[i].Topic = ""
			}
		} else {
			for i := range r.Topics {
				r.Topics[i].TopicID = [16]byte{}
			}
		}
	case *kmsg.FetchResponse:
		for _, b := range r.Brokers {
			out = append(out, fmt.Sprintf("%d=%s", b.NodeID, hostPort(b.Host, b.Port)))
		}
		r.Brokers, r.UnknownTags = nil, kmsg.Tags{}
	case *kmsg.ShareFetchResponse:
		for _, b := range r.NodeEndpoints {
			out = append(out, fmt.Sprintf("%d=%s", b.NodeID, hostPort(b.Host, b.Port)))
		}
		r.NodeEndpoints, r.UnknownTags = nil, kmsg.Tags{}
	}
	return out
}

// TestWalkRewritesEndpoints: a Produce v10+, Fetch v16+ or ShareFetch response streamed
// through the walker reaches the client with the same length and the same
// topics, partitions and record batches, its broker addresses rewritten to
// kproxy's (padded), or dropped when they do not fit; a refused node is left
// out; a response naming no broker goes untouched. Batches of 300 KiB take
// the splice path, small ones the read buffer's.
func TestWalkRewritesEndpoints(t *testing.T) {
	sizes := []int{0, -1, 10, 300 << 10, 5000}
	long := "broker-1.kafka.internal.example" // longer than kproxy.test
	cases := []struct {
		name    string
		brokers map[int32]string
		want    []string // nil: untouched
		dropped bool
	}{
		{"rewritten and padded", map[int32]string{1: long, 2: long}, []string{"1=kproxy.test:30001", "2=kproxy.test:30002"}, false},
		{"rewritten, same length", map[int32]string{1: "kproxy.fake"}, []string{"1=kproxy.test:30001"}, false},
		{"rewritten, two bytes shorter", map[int32]string{1: "kproxy.test.1"}, []string{"1=kproxy.test:30001"}, false},
		{"one byte shorter: dropped", map[int32]string{1: "kproxy.test1"}, []string{}, true},
		{"longer: dropped", map[int32]string{1: "b1", 2: "b2"}, []string{}, true},
		{"one longer, one shorter: fits", map[int32]string{1: "b1", 2: long}, []string{"1=kproxy.test:30001", "2=kproxy.test:30002"}, false},
		{"refused node left out", map[int32]string{1: long, refusedNode: long}, []string{"1=kproxy.test:30001"}, false},
		{"no brokers: untouched", nil, nil, false},
	}
	type api struct {
		key      kmsg.Key
		versions []int16
		build    func(sizes []int, brokers map[int32]string) kmsg.Response
	}
	apis := []api{
		{kmsg.Produce, []int16{10, 11, 12, 13}, func(s []int, b map[int32]string) kmsg.Response { return produceWith(len(s), b) }},
		{kmsg.Fetch, []int16{16, 17, 18}, func(s []int, b map[int32]string) kmsg.Response { return fetchWith(s, b) }},
		{kmsg.ShareFetch, []int16{0, 1, 2}, func(s []int, b map[int32]string) kmsg.Response { return shareFetchWith(s, b) }},
	}
	for _, a := range apis {
		for _, v := range a.versions {
			for _, tc := range cases {
				for _, mode := range []copyMode{copySplice, copyPooled} {
					name := fmt.Sprintf("%s/v%d/%s/mode%d", kmsg.NameForKey(int16(a.key)), v, tc.name, mode)
					t.Run(name, func(t *testing.T) {
						in := a.build(sizes, tc.brokers)
						in.SetVersion(v)
						if sf, ok := in.(*kmsg.ShareFetchResponse); ok && v == 0 {
							sf.AcquisitionLockTimeoutMillis = 0 // v1+
						}
						frame := sized(responseFrame(in, 77))
						out, dropped, failure := walkOver(t, frame, int16(a.key), v, mode)
						if failure != nil {
							t.Fatalf("failure: %v", failure)
						}
						if len(out) != len(frame) || !bytes.Equal(out[:9], frame[:9]) {
							t.Fatalf("got %d bytes starting %x; want %d starting %x", len(out), out[:min(9, len(out))], len(frame), frame[:9])
						}
						if tc.want == nil {
							if !bytes.Equal(out, frame) {
								t.Fatal("changed; want the frame untouched")
							}
							return
						}
						if dropped != tc.dropped {
							t.Errorf("dropped %v; want %v", dropped, tc.dropped)
						}
						got := kmsg.ResponseForKey(int16(a.key))
						got.SetVersion(v)
						if err := got.ReadFrom(out[9:]); err != nil {
							t.Fatalf("rewritten response does not parse: %v", err)
						}
						if eps := endpointsOf(got); strings.Join(eps, " ") != strings.Join(tc.want, " ") {
							t.Errorf("endpoints %v; want %v", eps, tc.want)
						}
						endpointsOf(in)
						if !reflect.DeepEqual(got, in) {
							t.Error("topics, partitions or records changed")
						}
					})
				}
			}
		}
	}
}

// TestWalkUntouchedWhenMalformed: a response whose structure does not parse
// (a record batch longer than the frame, a truncated topic, trailing bytes
// in the tail) is forwarded byte for byte, and the failure reported.
func TestWalkUntouchedWhenMalformed(t *testing.T) {
	good := fetchWith([]int{10, 20}, map[int32]string{1: "broker-1.kafka.internal"})
	good.SetVersion(16)
	body := responseFrame(good, 77)
	cases := map[string][]byte{
		"records longer than the frame": func() []byte {
			b := bytes.Clone(body)
			// The first partition's records length: after the header (5),
			// throttle, error, session (10), topics (1), topic id (16),
			// partitions (1), the partition's fixed fields (30),
			// aborted transactions (1) and preferred replica (4).
			if b[68] != 11 {
				t.Fatalf("byte 68 is %d; want the records length 10+1", b[68])
			}
			b[68], b[69] = 0xff, 0x7f // 16,383 bytes
			return b
		}(),
		"truncated":                body[:40],
		"tail with trailing bytes": append(bytes.Clone(body), 0, 0),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			frame := sized(b)
			out, _, failure := walkOver(t, frame, int16(kmsg.Fetch), 16, copySplice)
			if failure == nil {
				t.Error("no failure reported")
			}
			if !bytes.Equal(out, frame) {
				t.Error("changed; want the frame untouched")
			}
		})
	}
}

// FuzzWalk: whatever the bytes, the walker forwards exactly as many as the
// frame has; when kmsg parses the response, so does the walk, and the
// client gets the same response with only its endpoints changed; when the
// walk finds the structure bad, the frame goes untouched.
func FuzzWalk(f *testing.F) {
	for _, v := range []int16{16, 18} {
		r := fetchWith([]int{3, -1}, map[int32]string{1: "broker-1.kafka.internal"})
		r.SetVersion(v)
		f.Add(int16(kmsg.Fetch), v, responseFrame(r, 1)[4:])
	}
	for _, v := range []int16{10, 13} {
		r := produceWith(3, map[int32]string{1: "broker-1.kafka.internal"})
		r.SetVersion(v)
		f.Add(int16(kmsg.Produce), v, responseFrame(r, 1)[4:])
	}
	for _, v := range []int16{0, 1} {
		r := shareFetchWith([]int{3, -1}, map[int32]string{1: "b", 2: "broker-2.kafka.internal"})
		r.SetVersion(v)
		f.Add(int16(kmsg.ShareFetch), v, responseFrame(r, 1)[4:])
	}
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		if rewriteOf(key, version) != rewriteTail || version > versionCaps[key] {
			return
		}
		// The correlation id and an empty header tag section, then body.
		frame := sized(append([]byte{0, 0, 0, 1, 0}, body...))
		var sink bytes.Buffer
		br := bufio.NewReaderSize(bytes.NewReader(frame[4:]), readBufSize)
		w := newWalker(bufConn{&sink}, br, nil, copyPooled, [4]byte(frame[:4]), int32(len(frame)-4))
		if key == int16(kmsg.ShareFetch) {
			w.keepSkeleton(len(frame))
		}
		_, failure := walkResponse(w, &fakeRouter{learned: make(map[int32]string)}, key, version)
		out := sink.Bytes()
		if w.err != nil || len(out) != len(frame) {
			t.Fatalf("forwarded %d bytes of %d (%v)", len(out), len(frame), w.err)
		}
		if failure != nil && !bytes.Equal(out, frame) {
			t.Fatalf("not rewritten (%v), but the frame changed", failure)
		}
		in := kmsg.ResponseForKey(key)
		in.SetVersion(version)
		if in.ReadFrom(body) != nil {
			return
		}
		if w.bad {
			t.Fatal("kmsg parses the response, the walk does not")
		}
		if key == int16(kmsg.ShareFetch) {
			checkSkeleton(t, in.(*kmsg.ShareFetchResponse), w.keep)
		}
		if failure != nil {
			return // a tail that cannot keep its length: untouched, checked above
		}
		got := kmsg.ResponseForKey(key)
		got.SetVersion(version)
		if err := got.ReadFrom(out[9:]); err != nil {
			t.Fatalf("forwarded response does not parse: %v", err)
		}
		endpointsOf(in)
		endpointsOf(got)
		if !reflect.DeepEqual(got, in) {
			t.Fatal("the response changed beyond its endpoints")
		}
	})
}

// checkSkeleton checks that a ShareFetch response's skeleton, as the
// walker kept it, parses as the response with its records elided.
func checkSkeleton(t *testing.T, in *kmsg.ShareFetchResponse, skeleton []byte) {
	t.Helper()
	if skeleton == nil {
		t.Fatal("no skeleton kept")
	}
	got := kmsg.NewPtrShareFetchResponse()
	got.SetVersion(in.Version)
	if err := got.ReadFrom(skeleton[5:]); err != nil { // after the correlation id and header tags
		t.Fatalf("skeleton does not parse: %v", err)
	}
	want := *in
	want.Topics = slices.Clone(in.Topics)
	for i := range want.Topics {
		want.Topics[i].Partitions = slices.Clone(want.Topics[i].Partitions)
		for j := range want.Topics[i].Partitions {
			want.Topics[i].Partitions[j].Records = got.Topics[i].Partitions[j].Records
			if len(got.Topics[i].Partitions[j].Records) != 0 {
				t.Fatalf("topic %d partition %d: skeleton keeps %d bytes of records", i, j, len(got.Topics[i].Partitions[j].Records))
			}
		}
	}
	if !reflect.DeepEqual(got, &want) {
		t.Fatal("skeleton differs from the response beyond its records")
	}
}

// bufConn is a net.Conn whose writes go to a buffer, for walks in memory.
type bufConn struct{ w *bytes.Buffer }

func (c bufConn) Write(b []byte) (int, error)      { return c.w.Write(b) }
func (c bufConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c bufConn) Close() error                     { return nil }
func (c bufConn) LocalAddr() net.Addr              { return nil }
func (c bufConn) RemoteAddr() net.Addr             { return nil }
func (c bufConn) SetDeadline(time.Time) error      { return nil }
func (c bufConn) SetReadDeadline(time.Time) error  { return nil }
func (c bufConn) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkWalk moves Fetch v17 responses of 1 MiB between two TCP
// connections, streamed as a whole frame (what kproxy does below v16) and
// walked (what it does for v16+, to rewrite their endpoints), with the records in one partition or spread over 64 or 512.
// In one process on loopback, so the ratio, not the figure, is what to read.
func BenchmarkWalk(b *testing.B) {
	for _, parts := range []int{1, 64, 512} {
		sizes := make([]int, parts/2) // fetchWith makes two topics
		for i := range sizes {
			sizes[i] = (1 << 20) / parts
		}
		if parts == 1 {
			sizes = []int{1 << 20}
		}
		resp := fetchWith(sizes, nil)
		resp.SetVersion(17)
		frame := sized(responseFrame(resp, 1))
		for _, mode := range []string{"stream", "walk"} {
			b.Run(fmt.Sprintf("partitions=%d/%s", len(sizes)*2, mode), func(b *testing.B) {
				benchWalk(b, frame, mode)
			})
		}
	}
}

func benchWalk(b *testing.B, frame []byte, mode string) {
	r := &fakeRouter{learned: make(map[int32]string)}
	benchForward(b, frame, func(dst, src *net.TCPConn, br *bufio.Reader, prefix [4]byte, size int32) error {
		if mode == "stream" {
			_, err := streamFrame(dst, br, src, prefix, nil, int(size), copySplice)
			return err
		}
		w := newWalker(dst, br, src, copySplice, prefix, size)
		walkResponse(w, r, int16(kmsg.Fetch), 17)
		return w.err
	})
}

// TestWalkSkeletonBound walks a ShareFetch response with every bound on
// its skeleton: a skeleton that outgrows its bound is dropped, wherever
// that happens (a records field's length included), and the walk still
// reaches the tail and rewrites it.
func TestWalkSkeletonBound(t *testing.T) {
	r := shareFetchWith([]int{300, -1, 20}, map[int32]string{1: "b", 2: "broker-2.kafka.internal"})
	r.SetVersion(1)
	frame := sized(responseFrame(r, 1))
	for max := 0; max <= len(frame); max++ {
		var sink bytes.Buffer
		br := bufio.NewReaderSize(bytes.NewReader(frame[4:]), readBufSize)
		w := newWalker(bufConn{&sink}, br, nil, copyPooled, [4]byte(frame[:4]), int32(len(frame)-4))
		w.keepSkeleton(max)
		_, failure := walkResponse(w, &fakeRouter{learned: make(map[int32]string)}, int16(kmsg.ShareFetch), 1)
		if w.err != nil || sink.Len() != len(frame) {
			t.Fatalf("bound %d: forwarded %d bytes of %d (%v)", max, sink.Len(), len(frame), w.err)
		}
		if w.bad || failure != nil {
			t.Fatalf("bound %d: the walk failed (%v)", max, failure)
		}
		if w.keep != nil {
			checkSkeleton(t, r, w.keep)
		}
	}
}
