package timeline

import (
	"encoding/binary"
	"fmt"
	"time"
)

// A frozen generation's view is kept in its group's frozen block in a
// compact binary form rather than as JSON: the diagnosis reads the views
// of a group after nearly every entry of it, and decoding a view from
// JSON took several times the allocation and CPU of decoding this form
// (docs/benchmarks.md, "Frozen views in a binary form, snapshots sharing
// records"). The form is the fields of a GenerationView in their order,
// without its suspects (a frozen generation keeps those apart): integers
// and durations as varints, strings, lists and maps by their length, plus
// one, with 0 for nil, so that nil and empty stay apart as they do in
// JSON, and times as JSON keeps them (viewWriter.time). Decoded, it is the
// view the generation had while whole (TestFrozenTellsTheSame,
// TestFrozenViewRoundTrip), strings that are not valid UTF-8 included,
// which JSON would have replaced with U+FFFD.

// appendView is b with v, without its suspects, appended.
func appendView(b []byte, v *GenerationView) []byte {
	w := viewWriter{b}
	w.int(int64(v.Generation))
	w.str(v.Status)
	w.str(v.Protocol)
	w.str(v.Mode)
	w.str(v.Leader)
	w.time(v.Started)
	w.time(v.JoinCompleted)
	w.time(v.Stable)
	w.int(int64(v.StopTheWorld))
	w.int(int64(v.RebalanceTimeout))
	w.int(int64(v.FollowUpOf))
	w.len(v.Members == nil, len(v.Members))
	for i := range v.Members {
		m := &v.Members[i]
		w.str(m.MemberID)
		w.str(m.InstanceID)
		w.str(m.Status)
		w.time(m.Joined)
		w.strs(m.Subscription)
		w.parts(m.Assignment)
		w.strs(m.StreamsStandby)
		w.time(m.Reached)
		w.str(m.Protocol)
	}
	w.len(v.Departed == nil, len(v.Departed))
	for i := range v.Departed {
		d := &v.Departed[i]
		w.str(d.MemberID)
		w.str(d.InstanceID)
		w.str(d.How)
		w.str(d.Reason)
		w.time(d.At)
		w.parts(d.Partitions)
	}
	w.len(v.Rejoins == nil, len(v.Rejoins))
	for i := range v.Rejoins {
		r := &v.Rejoins[i]
		w.time(r.At)
		w.str(r.MemberID)
		w.str(r.InstanceID)
		w.str(r.Replaces)
		w.str(r.ClientID)
		w.str(r.ClientAddr)
	}
	w.parts(v.Unassigned)
	w.strs(v.MembersWithNothing)
	return w.b
}

// viewWriter appends a view's fields to b.
type viewWriter struct{ b []byte }

func (w *viewWriter) int(n int64) { w.b = binary.AppendVarint(w.b, n) }

// len writes a length, plus one; 0 when nil.
func (w *viewWriter) len(isNil bool, n int) {
	if isNil {
		w.b = append(w.b, 0)
		return
	}
	w.b = binary.AppendUvarint(w.b, uint64(n)+1)
}

func (w *viewWriter) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *viewWriter) strs(ss []string) {
	w.len(ss == nil, len(ss))
	for _, s := range ss {
		w.str(s)
	}
}

// parts writes a map of partitions by topic, its topics in no particular
// order.
func (w *viewWriter) parts(m map[string][]int32) {
	w.len(m == nil, len(m))
	for topic, ps := range m {
		w.str(topic)
		w.len(ps == nil, len(ps))
		for _, p := range ps {
			w.int(int64(p))
		}
	}
}

// time writes t as JSON keeps it: its instant, without the monotonic
// clock, and its zone's offset (readTime).
func (w *viewWriter) time(t time.Time) {
	_, off := t.Zone()
	w.int(t.Unix())
	w.int(int64(t.Nanosecond()))
	w.int(int64(off))
}

// decodeView is the view appendView wrote in b.
func decodeView(b []byte) (v GenerationView, err error) {
	defer func() {
		if recover() != nil { // an index out of range: b is cut short
			err = fmt.Errorf("a frozen view of %d bytes is cut short", len(b))
		}
	}()
	r := viewReader{b: b}
	v.Generation = int32(r.int())
	v.Status = r.str()
	v.Protocol = r.str()
	v.Mode = r.str()
	v.Leader = r.str()
	v.Started = r.time()
	v.JoinCompleted = r.time()
	v.Stable = r.time()
	v.StopTheWorld = time.Duration(r.int())
	v.RebalanceTimeout = time.Duration(r.int())
	v.FollowUpOf = int32(r.int())
	if n, ok := r.len(); ok {
		v.Members = make([]GenerationMember, n)
		for i := range v.Members {
			m := &v.Members[i]
			m.MemberID = r.str()
			m.InstanceID = r.str()
			m.Status = r.str()
			m.Joined = r.time()
			m.Subscription = r.strs()
			m.Assignment = r.parts()
			m.StreamsStandby = r.strs()
			m.Reached = r.time()
			m.Protocol = r.str()
		}
	}
	if n, ok := r.len(); ok {
		v.Departed = make([]DepartureView, n)
		for i := range v.Departed {
			d := &v.Departed[i]
			d.MemberID = r.str()
			d.InstanceID = r.str()
			d.How = r.str()
			d.Reason = r.str()
			d.At = r.time()
			d.Partitions = r.parts()
		}
	}
	if n, ok := r.len(); ok {
		v.Rejoins = make([]RejoinView, n)
		for i := range v.Rejoins {
			rj := &v.Rejoins[i]
			rj.At = r.time()
			rj.MemberID = r.str()
			rj.InstanceID = r.str()
			rj.Replaces = r.str()
			rj.ClientID = r.str()
			rj.ClientAddr = r.str()
		}
	}
	v.Unassigned = r.parts()
	v.MembersWithNothing = r.strs()
	if len(r.b) != 0 {
		return GenerationView{}, fmt.Errorf("a frozen view has %d bytes more", len(r.b))
	}
	return v, nil
}

// viewReader reads a view's fields from b; it panics with an index out
// of range when b is cut short (decodeView recovers).
type viewReader struct{ b []byte }

func (r *viewReader) int() int64 {
	n, k := binary.Varint(r.b)
	if k <= 0 {
		_ = r.b[len(r.b)] // cut short
	}
	r.b = r.b[k:]
	return n
}

func (r *viewReader) uint() uint64 {
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		_ = r.b[len(r.b)] // cut short
	}
	r.b = r.b[k:]
	return n
}

// len is a length, and false for nil.
func (r *viewReader) len() (int, bool) {
	n := r.uint()
	if n == 0 {
		return 0, false
	}
	if n-1 > uint64(len(r.b)) { // every item takes a byte at least
		_ = r.b[len(r.b)]
	}
	return int(n - 1), true
}

func (r *viewReader) str() string {
	n := r.uint()
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *viewReader) strs() []string {
	n, ok := r.len()
	if !ok {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (r *viewReader) parts() map[string][]int32 {
	n, ok := r.len()
	if !ok {
		return nil
	}
	out := make(map[string][]int32, n)
	for range n {
		topic := r.str()
		k, ok := r.len()
		var ps []int32
		if ok {
			ps = make([]int32, k)
			for i := range ps {
				ps[i] = int32(r.int())
			}
		}
		out[topic] = ps
	}
	return out
}

// time reads a time as viewWriter.time wrote it, in the location JSON's
// decoding gives it: UTC for offset 0, else Local when Local has that
// offset then, else a zone of that offset without a name.
func (r *viewReader) time() time.Time {
	t := time.Unix(r.int(), r.int())
	off := int(r.int())
	if off == 0 {
		return t.UTC()
	}
	if _, lo := t.In(time.Local).Zone(); lo == off {
		return t.In(time.Local)
	}
	return t.In(time.FixedZone("", off))
}
