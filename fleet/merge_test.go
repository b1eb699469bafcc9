package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// add is one record given to a Merger: an exchange (x), a gap (gap > 0)
// or a marker (marker), of instance inst, in partition part.
type add struct {
	inst    string
	seq     int64
	part    int32
	x       func() exchangeSpec
	gap     uint64
	marker  bool
	at      time.Time // gap or marker time
	stopped bool
}

// exchangeSpec is an exchange and its name in the expected output.
type exchangeSpec struct {
	id   uint64
	kind string // "hb" heartbeat, "join" JoinGroup
	gen  int32
	at   time.Time
}

func hb(id uint64, at time.Time) func() exchangeSpec {
	return func() exchangeSpec { return exchangeSpec{id: id, kind: "hb", at: at} }
}

func join(id uint64, gen int32, at time.Time) func() exchangeSpec {
	return func() exchangeSpec { return exchangeSpec{id: id, kind: "join", gen: gen, at: at} }
}

func (a add) record() Record {
	r := Record{Instance: a.inst, Run: "r-" + a.inst, Seq: a.seq, Key: "g"}
	switch {
	case a.marker:
		r.Seq, r.Kind, r.At, r.Stopping = -1, KindMarker, a.at, a.stopped
	case a.gap > 0:
		r.Kind, r.At, r.Dropped = KindGap, a.at, a.gap
	default:
		s := a.x()
		r.Kind = KindExchange
		if s.kind == "join" {
			r.X = joined(s.id, "g", s.gen, s.at)
		} else {
			r.X = heartbeat(s.id, "g", s.at)
		}
	}
	return r
}

// drain hands out the whole merged stream: "id@ms" per exchange, with
// "+n" before it when n were lost, and "+n" at the end for losses after
// the last.
func drain(m *Merger) string {
	var out []string
	for {
		x, d, ok := m.Next(true)
		if !ok {
			break
		}
		if d > 0 {
			out = append(out, fmt.Sprintf("+%d", d))
		}
		out = append(out, fmt.Sprintf("%d@%d", x.ConnID, x.ResponseAt.Sub(base).Milliseconds()))
	}
	if d := m.Dropped(); d > 0 {
		out = append(out, fmt.Sprintf("+%d", d))
	}
	return strings.Join(out, " ")
}

func TestMerger(t *testing.T) {
	tests := []struct {
		name    string
		maxSkew time.Duration
		adds    []add
		want    string
		offsets map[string]time.Duration
		refused uint64
		gaps    []string
	}{
		{
			name: "runs merged by completion time",
			adds: []add{
				{inst: "a", seq: 0, x: hb(1, ms(10))},
				{inst: "a", seq: 1, x: hb(2, ms(30))},
				{inst: "b", seq: 0, part: 1, x: hb(3, ms(20))},
				{inst: "b", seq: 1, part: 1, x: hb(4, ms(40))},
			},
			want: "1@10 3@20 2@30 4@40",
		},
		{
			name: "a run's own order is kept, whatever the times and the partitions",
			adds: []add{
				{inst: "a", seq: 1, part: 1, x: hb(2, ms(10))}, // read first, from another partition
				{inst: "a", seq: 0, x: hb(1, ms(11))},
				{inst: "b", seq: 0, part: 2, x: hb(3, ms(5))},
			},
			want: "3@5 1@11 2@10",
		},
		{
			name: "a hole in a run's sequence is counted as lost",
			adds: []add{
				{inst: "a", seq: 0, x: hb(1, ms(10))},
				{inst: "a", seq: 3, x: hb(2, ms(20))},
			},
			want: "1@10 +2 2@20",
		},
		{
			name: "gap records are counted before the next exchange",
			adds: []add{
				{inst: "a", seq: 0, x: hb(1, ms(10))},
				{inst: "a", seq: 1, gap: 5, at: ms(15)},
				{inst: "a", seq: 2, x: hb(2, ms(20))},
				{inst: "a", seq: 3, gap: 2, at: ms(25)},
			},
			want: "1@10 +5 2@20 +2",
		},
		{
			name: "gap counts saturate instead of wrapping past 2^64",
			adds: []add{
				{inst: "a", seq: 0, gap: 1 << 63, at: ms(5)},
				{inst: "a", seq: 1, gap: 1 << 63, at: ms(6)},
				{inst: "a", seq: 2, gap: 3, at: ms(7)},
				{inst: "a", seq: 3, x: hb(1, ms(10))},
			},
			want: "+18446744073709551615 1@10",
		},
		{
			name: "a clock 1.5 s ahead is corrected from one generation's JoinGroup answers",
			adds: []add{
				{inst: "a", seq: 0, x: hb(1, ms(1000))},
				{inst: "b", seq: 0, part: 1, x: hb(2, ms(2600))}, // really at 1100
				{inst: "a", seq: 1, x: join(3, 2, ms(1200))},
				{inst: "b", seq: 1, part: 1, x: join(4, 2, ms(2700))}, // really at 1200
				{inst: "a", seq: 2, x: hb(5, ms(1300))},
			},
			want:    "1@1000 2@1100 3@1200 4@1200 5@1300",
			offsets: map[string]time.Duration{"b": 1500 * time.Millisecond},
		},
		{
			name: "an offset within the tolerance is noise: times are kept",
			adds: []add{
				{inst: "a", seq: 0, x: join(1, 2, ms(1200))},
				{inst: "b", seq: 0, part: 1, x: join(2, 2, ms(1203))},
			},
			want:    "1@1200 2@1203",
			offsets: map[string]time.Duration{},
		},
		{
			name: "two estimates of one clock whose median is within the tolerance: times kept",
			adds: []add{
				{inst: "a", seq: 0, x: join(1, 2, ms(1200))},
				{inst: "b", seq: 0, part: 1, x: join(2, 2, ms(1202))},
				{inst: "a", seq: 1, x: join(3, 3, ms(2200))},
				{inst: "b", seq: 1, part: 1, x: join(4, 3, ms(2214))}, // observed 14 ms late
			},
			want:    "1@1200 2@1202 3@2200 4@2214",
			offsets: map[string]time.Duration{},
		},
		{
			name: "a clock 1.5 s ahead is corrected by the median of its estimates",
			adds: []add{
				{inst: "a", seq: 0, x: join(1, 2, ms(1200))},
				{inst: "b", seq: 0, part: 1, x: join(2, 2, ms(2730))}, // observed 30 ms late
				{inst: "a", seq: 1, x: join(3, 3, ms(2200))},
				{inst: "b", seq: 1, part: 1, x: join(4, 3, ms(3702))},
				{inst: "a", seq: 2, x: join(5, 4, ms(3200))},
				{inst: "b", seq: 2, part: 1, x: join(6, 4, ms(4701))},
			},
			want:    "1@1200 2@1228 3@2200 4@2200 6@3199 5@3200",
			offsets: map[string]time.Duration{"b": 1502 * time.Millisecond},
		},
		{
			name:    "an offset beyond max-skew is refused",
			maxSkew: time.Second,
			adds: []add{
				{inst: "a", seq: 0, x: join(1, 2, ms(1200))},
				{inst: "b", seq: 0, part: 1, x: join(2, 2, ms(2700))},
			},
			want:    "1@1200 2@2700",
			offsets: map[string]time.Duration{},
			refused: 1,
		},
		{
			name: "the reference is the instance whose id sorts first, whichever came first",
			adds: []add{
				{inst: "b", seq: 0, part: 1, x: join(2, 2, ms(2700))},
				{inst: "a", seq: 0, x: join(1, 2, ms(1200))},
			},
			want:    "1@1200 2@1200",
			offsets: map[string]time.Duration{"b": 1500 * time.Millisecond},
		},
		{
			name: "an instance that stops sending markers is reported silent; one that said it stopped is not",
			adds: []add{
				{inst: "a", marker: true, at: ms(0)},
				{inst: "b", marker: true, at: ms(0)},
				{inst: "c", marker: true, at: ms(0)},
				{inst: "c", marker: true, at: ms(1000), stopped: true},
				{inst: "b", seq: 0, x: hb(1, ms(1500))},
				{inst: "a", marker: true, at: ms(9000)},
			},
			want: "1@1500",
			gaps: []string{"b blind to g from 1500", "b silent from 1500"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMerger(MergeConfig{MaxSkew: tt.maxSkew})
			for _, a := range tt.adds {
				m.Add(a.record(), a.part)
			}
			if got := drain(m); got != tt.want {
				t.Errorf("merged %q; want %q", got, tt.want)
			}
			st := m.Stats()
			if tt.offsets != nil && fmt.Sprint(st.Offsets) != fmt.Sprint(tt.offsets) {
				t.Errorf("offsets %v; want %v", st.Offsets, tt.offsets)
			}
			var gaps []string
			if st.SkewRefused != tt.refused {
				t.Errorf("%d estimates refused; want %d", st.SkewRefused, tt.refused)
			}
			for _, b := range m.TakeBlind() {
				gaps = append(gaps, fmt.Sprintf("%s blind to %s from %d", b.Instance, b.Group, b.At.Sub(base).Milliseconds()))
			}
			for _, g := range st.Gaps {
				gaps = append(gaps, fmt.Sprintf("%s silent from %d", g.Instance, g.From.Sub(base).Milliseconds()))
			}
			if fmt.Sprint(gaps) != fmt.Sprint(tt.gaps) {
				t.Errorf("gaps %v; want %v", gaps, tt.gaps)
			}
		})
	}
}

// TestMergerHolds checks that, before the end, a record is handed out only
// once every partition still being read has gone Hold past it.
func TestMergerHolds(t *testing.T) {
	m := NewMerger(MergeConfig{Hold: time.Second})
	m.Expect(0)
	m.Expect(1)
	m.Add(add{inst: "a", seq: 0, x: hb(1, ms(0))}.record(), 0)
	m.Add(add{inst: "a", seq: 1, x: hb(2, ms(5000))}.record(), 0)
	if x, _, ok := m.Next(false); ok {
		t.Fatalf("handed out %d while partition 1 was not read at all", x.ConnID)
	}
	m.Add(add{inst: "b", seq: 0, x: hb(3, ms(500))}.record(), 1)
	m.Add(add{inst: "b", marker: true, at: ms(1200)}.record(), 1)
	var got []uint64
	for {
		x, _, ok := m.Next(false)
		if !ok {
			break
		}
		got = append(got, x.ConnID)
	}
	if fmt.Sprint(got) != "[1]" {
		t.Errorf("handed out %v with partition 1 read up to 1.2 s and a hold of 1 s; want [1]", got)
	}
	m.CaughtUp(1, true)
	m.CaughtUp(0, true)
	got = got[:0]
	for {
		x, _, ok := m.Next(false)
		if !ok {
			break
		}
		got = append(got, x.ConnID)
	}
	if fmt.Sprint(got) != "[3]" {
		t.Errorf("handed out %v once both partitions were caught up (watermark 5 s); want [3]", got)
	}
}

// TestMergerForgetsOldMoments: the coordinator's moments are kept one to
// two minutes of the merged stream's time (pruned once a minute), not
// forever.
func TestMergerForgetsOldMoments(t *testing.T) {
	m := NewMerger(MergeConfig{})
	for i := range 300 {
		m.Add(add{inst: "a", seq: int64(i), x: join(uint64(i), int32(i+1), ms(i*1000))}.record(), 0)
	}
	if n := len(m.sync); n < 60 || n > 121 {
		t.Errorf("%d moments kept after 300 s of one per second; want one to two minutes' worth", n)
	}
	drain(m)
}

// TestMergerLate: a record arriving after the merge handed out records
// more than Hold later is counted late and handed out, in its run's order;
// one behind its run's sequence is left out.
func TestMergerLate(t *testing.T) {
	m := NewMerger(MergeConfig{Hold: time.Second})
	m.Add(add{inst: "a", seq: 0, x: hb(1, ms(0))}.record(), 0)
	m.Add(add{inst: "a", seq: 1, x: hb(2, ms(3000))}.record(), 0)
	m.Add(add{inst: "a", seq: 2, x: hb(5, ms(9000))}.record(), 0)
	var got []string
	for {
		x, _, ok := m.Next(false)
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("%d@%d", x.ConnID, x.ResponseAt.Sub(base).Milliseconds()))
	}
	m.Add(add{inst: "b", seq: 0, part: 1, x: hb(3, ms(1000))}.record(), 1) // 2 s behind what went out
	m.Add(add{inst: "a", seq: 0, x: hb(4, ms(1))}.record(), 0)             // a's seq 0 again
	got = append(got, strings.Fields(drain(m))...)
	if want := "[1@0 2@3000 3@1000 5@9000]"; fmt.Sprint(got) != want || m.Stats().Late != 2 {
		t.Errorf("handed out %v, %d late; want %s, 2 late (3 out of time order, 4 behind its run)", got, m.Stats().Late, want)
	}
}

// TestMergerQualifiesSharedAddresses: a client address first seen through
// one instance and then through another (two sidecars' clients on the same
// loopback port) names the second instance; each instance's own addresses
// stay as they are.
func TestMergerQualifiesSharedAddresses(t *testing.T) {
	m := NewMerger(MergeConfig{})
	m.Add(add{inst: "a", seq: 0, x: hb(1, ms(0))}.record(), 0)
	m.Add(add{inst: "b", seq: 0, part: 1, x: hb(2, ms(1))}.record(), 1)
	m.Add(add{inst: "a", seq: 1, x: hb(3, ms(2))}.record(), 0)
	var got []string
	for {
		x, _, ok := m.Next(true)
		if !ok {
			break
		}
		got = append(got, x.ClientAddr)
	}
	if want := "[127.0.0.1:50000 127.0.0.1:50000 via b 127.0.0.1:50000]"; fmt.Sprint(got) != want {
		t.Errorf("client addresses %v; want %s", got, want)
	}
}

// TestMergerBlindInOrder: records are read ahead of what the merge hands
// out, so an instance is found silent before the exchanges that came
// before its silence have gone out. What it was blind to must be taken,
// as the pipeline takes it after each Next, just before the first
// exchange after the silence: told earlier, the timeline would not know
// the group yet.
func TestMergerBlindInOrder(t *testing.T) {
	adds := []add{
		{inst: "a", marker: true, at: ms(0)},
		{inst: "b", seq: 0, part: 1, x: hb(1, ms(1000))},
		{inst: "b", seq: 1, part: 1, x: hb(2, ms(1500))},
		{inst: "a", seq: 0, x: hb(3, ms(2000))},
		{inst: "a", seq: 1, x: hb(4, ms(5000))},
		{inst: "a", seq: 2, x: hb(5, ms(8000))},
		{inst: "a", marker: true, at: ms(12000)},
	}
	tests := []struct {
		name  string
		final bool // replay: the topic read to its end; otherwise live, caught up
		want  string
	}{
		{"replay", true, "1@1000 2@1500 blind b g 1500 3@2000 4@5000 5@8000"},
		{"live", false, "1@1000 2@1500 blind b g 1500 3@2000 4@5000 5@8000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMerger(MergeConfig{})
			for _, a := range adds {
				m.Add(a.record(), a.part)
			}
			m.CaughtUp(0, true)
			m.CaughtUp(1, true)
			var out []string
			for {
				x, _, ok := m.Next(tt.final)
				for _, b := range m.TakeBlind() {
					out = append(out, fmt.Sprintf("blind %s %s %d", b.Instance, b.Group, b.At.Sub(base).Milliseconds()))
				}
				if !ok {
					break
				}
				out = append(out, fmt.Sprintf("%d@%d", x.ConnID, x.ResponseAt.Sub(base).Milliseconds()))
			}
			if got := strings.Join(out, " "); got != tt.want {
				t.Errorf("handed out %q; want %q", got, tt.want)
			}
		})
	}
}
