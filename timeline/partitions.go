package timeline

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kproxy-dev/kproxy/decode"
)

// partitions is a set of partitions by topic: its topics sorted by name,
// each once and with at least one partition, their partition numbers
// sorted and distinct. A nil partitions means "unknown"; an empty non-nil
// one means "none".
//
// It is a slice rather than a map by topic: generations keep one or more
// sets per member (assignment, plan, owned, revoked), mostly of one topic,
// and a map of one topic takes 416 bytes where this takes 48 (plus the
// partition numbers, either way).
type partitions []topicParts

// topicParts is one topic of a partitions set.
type topicParts struct {
	topic string
	parts []int32 // sorted, distinct, not empty
}

func fromTopicPartitions(tps []decode.TopicPartitions) partitions {
	p := make(partitions, 0, len(tps))
	for _, tp := range tps {
		p.addAll(tp.Topic, tp.Partitions)
	}
	return p
}

// fromMap is m, a report's partitions by topic, as a set; the partition
// numbers are taken as they are (a report's are sorted and distinct).
func fromMap(m map[string][]int32) partitions {
	if m == nil {
		return nil
	}
	p := make(partitions, 0, len(m))
	for t, ps := range m {
		if len(ps) > 0 {
			p = append(p, topicParts{topic: t, parts: ps})
		}
	}
	slices.SortFunc(p, func(a, b topicParts) int { return strings.Compare(a.topic, b.topic) })
	return p
}

// find is the index of topic in p, or where it would go, and whether p has
// it.
func (p partitions) find(topic string) (int, bool) {
	return slices.BinarySearchFunc(p, topic, func(tp topicParts, t string) int { return strings.Compare(tp.topic, t) })
}

// of is topic's partitions in p, nil when none.
func (p partitions) of(topic string) []int32 {
	if i, ok := p.find(topic); ok {
		return p[i].parts
	}
	return nil
}

// addAll adds ps to topic, keeping the list sorted and distinct.
func (p *partitions) addAll(topic string, ps []int32) {
	if len(ps) == 0 {
		return
	}
	i, ok := p.find(topic)
	var cur []int32
	if ok {
		cur = append((*p)[i].parts, ps...)
	} else {
		cur = slices.Clone(ps)
	}
	slices.Sort(cur)
	cur = slices.Compact(cur)
	if ok {
		(*p)[i].parts = cur
		return
	}
	*p = slices.Insert(*p, i, topicParts{topic: topic, parts: cur})
}

// equal reports whether p and q are the same set; nil (unknown) equals
// only nil.
func (p partitions) equal(q partitions) bool {
	if (p == nil) != (q == nil) || len(p) != len(q) {
		return false
	}
	for i := range p {
		if p[i].topic != q[i].topic || !slices.Equal(p[i].parts, q[i].parts) {
			return false
		}
	}
	return true
}

func (p partitions) has(topic string, part int32) bool {
	_, ok := slices.BinarySearch(p.of(topic), part)
	return ok
}

func (p partitions) count() int {
	n := 0
	for _, tp := range p {
		n += len(tp.parts)
	}
	return n
}

// topics is p's topics, sorted.
func (p partitions) topics() []string {
	ts := make([]string, 0, len(p))
	for _, tp := range p {
		ts = append(ts, tp.topic)
	}
	return ts
}

// soleTopic is the one topic of p, if there is exactly one.
func (p partitions) soleTopic() (string, bool) {
	if len(p) != 1 {
		return "", false
	}
	return p[0].topic, true
}

func (p partitions) clone() partitions {
	if p == nil {
		return nil
	}
	c := make(partitions, len(p))
	for i, tp := range p {
		c[i] = topicParts{topic: tp.topic, parts: slices.Clone(tp.parts)}
	}
	return c
}

// json returns p for a JSON field: nil (unknown) stays nil, an empty set
// is an empty object.
func (p partitions) json() map[string][]int32 {
	if p == nil {
		return nil
	}
	out := make(map[string][]int32, len(p))
	for _, tp := range p {
		out[tp.topic] = tp.parts
	}
	return out
}

// diff compares prev and cur: added is in cur only, revoked in prev only,
// kept in both. Each result is non-nil. A result that is all of prev or
// cur, or of one topic's partitions of them, is that set or that list,
// shared (sets are not changed once made): most members keep what they
// had.
func diff(prev, cur partitions) (added, revoked, kept partitions) {
	added, revoked, kept = partitions{}, partitions{}, partitions{}
	for _, c := range cur {
		a, k := minus(c.parts, prev.of(c.topic))
		if len(a) > 0 {
			added = append(added, topicParts{topic: c.topic, parts: a})
		}
		if len(k) > 0 {
			kept = append(kept, topicParts{topic: c.topic, parts: k})
		}
	}
	for _, pt := range prev {
		r, _ := minus(pt.parts, cur.of(pt.topic))
		if len(r) > 0 {
			revoked = append(revoked, topicParts{topic: pt.topic, parts: r})
		}
	}
	if sameLists(kept, cur) {
		kept = cur
	}
	if sameLists(added, cur) {
		added = cur
	}
	if sameLists(revoked, prev) {
		revoked = prev
	}
	return added, revoked, kept
}

// sameLists reports whether p's topics are q's, each with the very list of
// partitions q has (as minus returns them).
func sameLists(p, q partitions) bool {
	if len(p) != len(q) || len(p) == 0 {
		return false
	}
	for i := range p {
		if p[i].topic != q[i].topic || len(p[i].parts) != len(q[i].parts) || &p[i].parts[0] != &q[i].parts[0] {
			return false
		}
	}
	return true
}

// minus returns the elements of a not in b, and those in both; a and b are
// sorted. Either is a itself (its capacity cut to its length) when it has
// all of a.
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
	switch len(a) {
	case 0:
	case len(only):
		only = a[:len(a):len(a)]
	case len(both):
		both = a[:len(a):len(a)]
	}
	return only, both
}

// union merges partition sets, sorting each topic once.
func union(sets []partitions) partitions {
	out := partitions{}
	for _, s := range sets {
		for _, tp := range s {
			i, ok := out.find(tp.topic)
			if !ok {
				out = slices.Insert(out, i, topicParts{topic: tp.topic})
			}
			out[i].parts = append(out[i].parts, tp.parts...)
		}
	}
	for i := range out {
		slices.Sort(out[i].parts)
		out[i].parts = slices.Compact(out[i].parts)
	}
	return out
}

// String renders p as "t1[0 1 2] t2[4-9]": topics sorted, runs of four or
// more consecutive partitions collapsed to a range.
func (p partitions) String() string {
	var b strings.Builder
	for i, tp := range p {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(tp.topic)
		b.WriteByte('[')
		writeRuns(&b, tp.parts)
		b.WriteByte(']')
	}
	return b.String()
}

func writeRuns(b *strings.Builder, ps []int32) {
	for i, runs := 0, 0; i < len(ps); runs++ {
		if runs == maxListed {
			fmt.Fprintf(b, " … and %d more", len(ps)-i)
			return
		}
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
