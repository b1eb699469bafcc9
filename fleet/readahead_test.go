package fleet

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSourceReadAhead: one partition holds ten times the records of the
// others over the same stretch of time. Read a little at a time, the
// sparse partitions run ahead of the dense one in time; the Source pauses
// them, so the merge holds a few seconds of traffic, not the sparse
// partitions whole, and still hands out every exchange in time order.
func TestSourceReadAhead(t *testing.T) {
	c := startCluster(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(4<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := EnsureTopic(ctx, cl, testTopic, 4, time.Hour); err != nil {
		t.Fatal(err)
	}
	const (
		span   = 100 * time.Second
		dense  = 10 * time.Millisecond  // partition 0's step
		sparse = 100 * time.Millisecond // the others'
	)
	total := 0
	for p := range int32(4) {
		step := sparse
		if p == 0 {
			step = dense
		}
		inst := fmt.Sprintf("zone-%d", p)
		h := headers(inst, "run-1")
		var recs []*kgo.Record
		for i := 0; time.Duration(i)*step < span; i++ {
			at := base.Add(time.Duration(i) * step)
			r := exchangeRecord(h, uint64(i), fmt.Sprintf("g-%d", p), heartbeat(uint64(total), fmt.Sprintf("g-%d", p), at))
			r.Topic, r.Partition = testTopic, p
			recs = append(recs, r)
			total++
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	src, err := OpenSource(ctx, SourceConfig{Topic: testTopic, Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.FetchMaxPartitionBytes(8 << 10)}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	n := 0
	var last time.Time
	for {
		x, d, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if x == nil {
			continue // a tick
		}
		if d > 0 {
			t.Fatalf("%d exchanges lost before exchange %d", d, x.ConnID)
		}
		if x.ResponseAt.Before(last) {
			t.Fatalf("exchange %d at %v handed out after one at %v", x.ConnID, x.ResponseAt, last)
		}
		last = x.ResponseAt
		n++
	}
	st := src.Stats()
	if n != total || st.Late != 0 || st.Lost != 0 {
		t.Fatalf("handed out %d exchanges of %d (late %d, lost %d)", n, total, st.Late, st.Lost)
	}
	// Hold (4 s) behind the partition the merge waits for and a second
	// ahead of it, plus a fetch (8 KiB, 2 s of a sparse partition): about
	// 1,300 records. Read without pauses, the sparse partitions wait in the
	// merge whole: 3,000 and more.
	t.Logf("peak pending %d of %d records", st.PeakPending, total)
	if max := 2000; st.PeakPending > max {
		t.Errorf("the merge held %d records at once, want at most %d of %d", st.PeakPending, max, total)
	}
}

// TestMergerForgetsStoppedRuns: a run that sent its stopping marker is
// forgotten once its records are handed out and the stream has passed it
// by more than the skew; one that stopped without a marker, or whose
// records are not handed out yet, is kept. Both still count as seen.
func TestMergerForgetsStoppedRuns(t *testing.T) {
	tests := []struct {
		name     string
		stopping bool
		until    int // ms of b's last heartbeat
		want     []string
	}{
		{name: "stopped, passed", stopping: true, until: 10000, want: []string{"b"}},
		{name: "stopped, within hold and skew", stopping: true, until: 5000, want: []string{"a", "b"}},
		{name: "killed", stopping: false, until: 10000, want: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMerger(MergeConfig{SilentAfter: time.Hour})
			for _, a := range []add{
				{inst: "a", seq: 0, x: hb(1, ms(0))},
				{inst: "a", marker: true, stopped: tt.stopping, at: ms(100)},
				{inst: "b", seq: 0, x: hb(2, ms(50))},
				{inst: "b", seq: 1, x: hb(3, ms(tt.until))},
			} {
				m.Add(a.record(), 0)
			}
			for {
				if _, _, ok := m.Next(false); !ok {
					break
				}
			}
			var got []string
			for _, r := range m.order {
				got = append(got, r.instance)
			}
			if len(m.runs) != len(got) || !slices.Equal(got, tt.want) {
				t.Errorf("runs kept %v (%d in the map), want %v", got, len(m.runs), tt.want)
			}
			if n := m.Stats().Instances; n != 2 {
				t.Errorf("Instances = %d, want 2", n)
			}
		})
	}
}
