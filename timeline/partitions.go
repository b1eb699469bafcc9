package timeline

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kproxy-dev/kproxy/decode"
)

// partitions is a set of partitions by topic: topic -> sorted, distinct
// partition numbers. A nil partitions means "unknown"; an empty non-nil one
// means "none".
type partitions map[string][]int32

func fromTopicPartitions(tps []decode.TopicPartitions) partitions {
	p := make(partitions, len(tps))
	for _, tp := range tps {
		p.addAll(tp.Topic, tp.Partitions)
	}
	return p
}

// addAll adds ps to topic, keeping the list sorted and distinct.
func (p partitions) addAll(topic string, ps []int32) {
	if len(ps) == 0 {
		return
	}
	cur := append(p[topic], ps...)
	slices.Sort(cur)
	p[topic] = slices.Compact(cur)
}

func (p partitions) has(topic string, part int32) bool {
	_, ok := slices.BinarySearch(p[topic], part)
	return ok
}

func (p partitions) count() int {
	n := 0
	for _, ps := range p {
		n += len(ps)
	}
	return n
}

func (p partitions) topics() []string {
	ts := make([]string, 0, len(p))
	for t, ps := range p {
		if len(ps) > 0 {
			ts = append(ts, t)
		}
	}
	sort.Strings(ts)
	return ts
}

// soleTopic is the one topic of p with partitions, if there is exactly
// one: topics without allocating and sorting, for that common case.
func (p partitions) soleTopic() (string, bool) {
	topic, n := "", 0
	for t, ps := range p {
		if len(ps) > 0 {
			topic = t
			n++
		}
	}
	return topic, n == 1
}

func (p partitions) clone() partitions {
	if p == nil {
		return nil
	}
	c := make(partitions, len(p))
	for t, ps := range p {
		c[t] = slices.Clone(ps)
	}
	return c
}

// json returns p for a JSON field without its empty topics: nil (unknown)
// stays nil, an empty set stays an empty object.
func (p partitions) json() map[string][]int32 {
	if p == nil {
		return nil
	}
	out := make(map[string][]int32, len(p))
	for t, ps := range p {
		if len(ps) > 0 {
			out[t] = ps
		}
	}
	return out
}

// diff compares prev and cur: added is in cur only, revoked in prev only,
// kept in both. Each result is non-nil.
func diff(prev, cur partitions) (added, revoked, kept partitions) {
	added, revoked, kept = partitions{}, partitions{}, partitions{}
	for t, cs := range cur {
		a, k := minus(cs, prev[t])
		if len(a) > 0 {
			added[t] = a
		}
		if len(k) > 0 {
			kept[t] = k
		}
	}
	for t, ps := range prev {
		r, _ := minus(ps, cur[t])
		if len(r) > 0 {
			revoked[t] = r
		}
	}
	return added, revoked, kept
}

// minus returns the elements of a not in b, and those in both; a and b are
// sorted.
func minus(a, b []int32) (only, both []int32) {
	i, j := 0, 0
	for i < len(a) {
		switch {
		case j >= len(b) || a[i] < b[j]:
			only = append(only, a[i])
			i++
		case a[i] > b[j]:
			j++
		default:
			both = append(both, a[i])
			i++
			j++
		}
	}
	return only, both
}

// String renders p as "t1[0 1 2] t2[4-9]": topics sorted, runs of four or
// more consecutive partitions collapsed to a range.
func (p partitions) String() string {
	var b strings.Builder
	if len(p) == 1 { // the common case, without sorting the topics
		for t, ps := range p {
			if len(ps) > 0 {
				b.WriteString(t)
				b.WriteByte('[')
				writeRuns(&b, ps)
				b.WriteByte(']')
			}
		}
		return b.String()
	}
	for i, t := range p.topics() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
		b.WriteByte('[')
		writeRuns(&b, p[t])
		b.WriteByte(']')
	}
	return b.String()
}

func writeRuns(b *strings.Builder, ps []int32) {
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		if j-i >= 3 {
			b.WriteString(strconv.Itoa(int(ps[i])))
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(ps[j])))
			i = j + 1
			continue
		}
		b.WriteString(strconv.Itoa(int(ps[i])))
		i++
	}
}
