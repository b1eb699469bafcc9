package timeline

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// KIP-932 share groups. Membership (ShareGroupHeartbeat) works as KIP-848's:
// a group epoch bumped by joins and leaves, a member epoch per member, an
// assignment from the coordinator; but members may share partitions and
// never revoke. The engine tells it with the KIP-848 machinery (kip848.go),
// each generation a group epoch of mode ModeShare.
//
// Records are not owned but acquired: each ShareFetch response lists the
// offset ranges it acquired for its member, with how many times each was
// delivered, and the member acknowledges them (accept, release, reject) in
// a later ShareFetch or ShareAcknowledge. A record acquired and not
// acknowledged is held under an acquisition lock; when its member leaves,
// is fenced or dies, the broker delivers it again to another member once
// the lock expires: the share-group form of the duplicate window, told
// here from the ranges alone (the records are never read).

// Kinds of the share-group entries.
const (
	// KindRecordsAbandoned: a share member left or was fenced holding
	// records it had not acknowledged.
	KindRecordsAbandoned Kind = "records_abandoned"
	// KindRedelivered: records another member held unacknowledged were
	// delivered again.
	KindRedelivered Kind = "redelivered"
)

func init() {
	subKinds[KindRecordsAbandoned] = true
	subKinds[KindRedelivered] = true
}

const (
	// maxShareRedeliveries bounds the redeliveries a group's report keeps
	// (the entries tell them all).
	maxShareRedeliveries = 100
	// maxHeldRanges bounds the unacknowledged ranges kept per member and
	// partition, and the departed holders' per partition: a member that
	// acknowledges what it gets holds a few.
	maxHeldRanges = 1000
)

// shareState is a share group's records.
type shareState struct {
	lockTimeout time.Duration // the last AcquisitionLockTimeout answered; 0 unknown
	// counts are by member, then partition.
	counts map[string]map[shareKey]*shareCounts
	parts  map[shareKey]*sharePartition
	// redeliveries are the first maxShareRedeliveries; dropped counts the
	// others.
	redeliveries []redelivery
	dropped      int
}

// shareKey is a partition, its topic by id as the wire names it.
type shareKey struct {
	topic     decode.TopicID
	partition int32
}

// shareCounts are one member's records on one partition.
type shareCounts struct {
	acquired, redelivered                   int64
	accepted, released, rejected, ackFailed int64
}

// sharePartition is who holds which offsets of a partition.
type sharePartition struct {
	held      map[string][]offRange // by member: acquired, not acknowledged
	abandoned []abandoned           // held by members that left or were fenced
	// lost counts the ranges not kept beyond maxHeldRanges.
	lost int
}

// abandoned are offsets a member held when it left or was fenced.
type abandoned struct {
	member, how string
	at          time.Time
	ranges      []offRange
}

// redelivery is offsets one member held, acquired again by another.
type redelivery struct {
	at            time.Time
	key           shareKey
	ranges        []offRange
	deliveryCount int16 // the highest among the ranges
	to, from      string
	how           string    // "left", "fenced" or "lock_expired"
	departedAt    time.Time // when from left or was fenced; zero for lock_expired
}

// offRange is a range of offsets, both ends included.
type offRange struct{ first, last int64 }

func (r offRange) records() int64 { return r.last - r.first + 1 }

// addRange adds r to the sorted, disjoint ranges rs, merging.
func addRange(rs []offRange, r offRange) []offRange {
	i, _ := slices.BinarySearchFunc(rs, r.first, func(x offRange, f int64) int { return cmp.Compare(x.last+1, f) })
	j := i
	for j < len(rs) && rs[j].first <= r.last+1 {
		r.first, r.last = min(r.first, rs[j].first), max(r.last, rs[j].last)
		j++
	}
	return slices.Replace(rs, i, j, r)
}

// cutRange removes r from rs and returns what is left and what was cut.
func cutRange(rs []offRange, r offRange) (rest, cut []offRange) {
	for _, x := range rs {
		if x.last < r.first || x.first > r.last {
			rest = append(rest, x)
			continue
		}
		cut = append(cut, offRange{max(x.first, r.first), min(x.last, r.last)})
		if x.first < r.first {
			rest = append(rest, offRange{x.first, r.first - 1})
		}
		if x.last > r.last {
			rest = append(rest, offRange{r.last + 1, x.last})
		}
	}
	return rest, cut
}

func countRanges(rs []offRange) int64 {
	var n int64
	for _, r := range rs {
		n += r.records()
	}
	return n
}

// rangesString renders ranges as "10-19 25".
func rangesString(rs []offRange) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(' ')
		}
		if r.first == r.last {
			fmt.Fprintf(&b, "%d", r.first)
		} else {
			fmt.Fprintf(&b, "%d-%d", r.first, r.last)
		}
	}
	return b.String()
}

// shareGroup is the group's share state, the group made a share group if
// it was not one.
func (g *group) shareGroup() *consumerGroup {
	if g.consumer == nil {
		g.consumer = &consumerGroup{members: map[string]*cmember{}}
	}
	if g.consumer.share == nil {
		g.consumer.share = &shareState{counts: map[string]map[shareKey]*shareCounts{}, parts: map[shareKey]*sharePartition{}}
		g.protocolType = "share"
	}
	return g.consumer
}

// shareHeartbeat handles a ShareGroupHeartbeat: told as a
// ConsumerGroupHeartbeat whose member owns and revokes nothing. A member
// that leaves or is fenced abandons the records it holds.
func (g *group) shareHeartbeat(ev *decode.Event) {
	h := ev.ShareGroupHeartbeat
	cg := g.shareGroup()
	id := cmp.Or(h.AssignedMemberID, h.MemberID)
	wasActive := cg.members[id] != nil && cg.members[id].active
	c := *ev
	c.ShareGroupHeartbeat = nil
	c.ConsumerGroupHeartbeat = &decode.ConsumerGroupHeartbeat{MemberID: h.MemberID, MemberEpoch: h.MemberEpoch,
		RackID: h.RackID, SubscribedTopicNames: h.SubscribedTopicNames, ErrorCode: h.ErrorCode, ErrorMessage: h.ErrorMessage,
		AssignedMemberID: h.AssignedMemberID, AssignedEpoch: h.AssignedEpoch, HeartbeatInterval: h.HeartbeatInterval,
		Assignment: h.Assignment}
	g.consumerHeartbeat(&c)
	if cm := cg.members[id]; wasActive && cm != nil && !cm.active {
		how := "left"
		if n := len(cm.fences); n > 0 && cm.fences[n-1].at.Equal(ev.At) {
			how = "fenced"
		}
		g.shareDeparted(id, how, ev.At)
	}
}

// shareDeparted moves what a departed member held to its partitions'
// abandoned ranges, and tells it.
func (g *group) shareDeparted(id, how string, at time.Time) {
	st := g.consumer.share
	var held partitions
	var parts []string
	var total int64
	for _, k := range st.sortedParts() {
		sp := st.parts[k]
		rs := sp.held[id]
		if len(rs) == 0 {
			continue
		}
		delete(sp.held, id)
		if len(sp.abandoned) >= maxHeldRanges {
			sp.lost++
			sp.abandoned = sp.abandoned[1:]
		}
		sp.abandoned = append(sp.abandoned, abandoned{member: id, how: how, at: at, ranges: rs})
		topic := g.topicName(k.topic)
		held.addAll(topic, []int32{k.partition})
		parts = append(parts, fmt.Sprintf("%s[%d] %s", topic, k.partition, rangesString(rs)))
		total += countRanges(rs)
	}
	if total == 0 {
		return
	}
	lock := "at the latest when their acquisition locks expire"
	if st.lockTimeout > 0 {
		lock += " (" + human(st.lockTimeout) + ")"
	}
	g.emit(at, KindRecordsAbandoned, g.consumer.epoch, id, fmt.Sprintf("%s %s holding %d unacknowledged records (%s): the broker delivers them to another member once released, %s",
		id, how, total, strings.Join(parts, ", "), lock), map[string]any{"records": total, "how": how, "partitions": held.json()})
}

// topicName is a topic id's name where Metadata gave it, else the id.
func (g *group) topicName(id decode.TopicID) string {
	if n, ok := g.e.topics.names[id]; ok {
		return n
	}
	return id.String()
}

func (st *shareState) sortedParts() []shareKey {
	keys := make([]shareKey, 0, len(st.parts))
	for k := range st.parts {
		keys = append(keys, k)
	}
	sortShareKeys(keys)
	return keys
}

func sortShareKeys(keys []shareKey) { slices.SortFunc(keys, compareShareKeys) }

func compareShareKeys(a, b shareKey) int {
	if c := strings.Compare(string(a.topic[:]), string(b.topic[:])); c != 0 {
		return c
	}
	return cmp.Compare(a.partition, b.partition)
}

func (st *shareState) part(k shareKey) *sharePartition {
	sp := st.parts[k]
	if sp == nil {
		sp = &sharePartition{held: map[string][]offRange{}}
		st.parts[k] = sp
	}
	return sp
}

func (st *shareState) count(member string, k shareKey) *shareCounts {
	m := st.counts[member]
	if m == nil {
		m = map[shareKey]*shareCounts{}
		st.counts[member] = m
	}
	c := m[k]
	if c == nil {
		c = &shareCounts{}
		m[k] = c
	}
	return c
}

// shareFetch handles a ShareFetch: the acknowledgements it carried, then
// the records it acquired.
func (g *group) shareFetch(ev *decode.Event) {
	f := ev.ShareFetch
	st := g.shareGroup().share
	if f.AcquisitionLockTimeout > 0 {
		st.lockTimeout = f.AcquisitionLockTimeout
	}
	if f.MemberID == "" {
		return
	}
	g.acknowledge(ev, "ShareFetch", f.MemberID, f.Acknowledgements, func(k shareKey) int16 {
		if f.ErrorCode != 0 {
			return f.ErrorCode
		}
		i, ok := slices.BinarySearchFunc(f.Partitions, k, func(p decode.ShareFetchPartition, k shareKey) int {
			return compareShareKeys(shareKey{p.TopicID, p.Partition}, k)
		})
		if !ok {
			return 0
		}
		return f.Partitions[i].AcknowledgeErrorCode
	})
	if f.ErrorCode != 0 {
		return
	}
	for _, p := range f.Partitions {
		if p.ErrorCode != 0 {
			continue
		}
		for _, r := range p.Acquired {
			g.acquire(ev, f.MemberID, shareKey{p.TopicID, p.Partition}, r)
		}
	}
}

// shareAcknowledge handles a ShareAcknowledge.
func (g *group) shareAcknowledge(ev *decode.Event) {
	a := ev.ShareAcknowledge
	g.shareGroup()
	if a.MemberID == "" {
		return
	}
	g.acknowledge(ev, "ShareAcknowledge", a.MemberID, a.Acknowledgements, func(k shareKey) int16 {
		if a.ErrorCode != 0 {
			return a.ErrorCode
		}
		i, ok := slices.BinarySearchFunc(a.Partitions, k, func(p decode.SharePartitionError, k shareKey) int {
			return compareShareKeys(shareKey{p.TopicID, p.Partition}, k)
		})
		if !ok {
			return 0
		}
		return a.Partitions[i].ErrorCode
	})
}

// acknowledge applies a member's acknowledgements: the offsets are no
// longer held (but for renewals, which extend the lock), and once the
// response says how they went they are counted, as acknowledged or as
// failed. errOf is the error of a partition's acknowledgements.
func (g *group) acknowledge(ev *decode.Event, api, member string, acks []decode.ShareAck, errOf func(shareKey) int16) {
	st := g.consumer.share
	for _, a := range acks {
		k := shareKey{a.TopicID, a.Partition}
		r := offRange{a.FirstOffset, a.LastOffset}
		if r.records() > 0 && a.Renewed < r.records() {
			if sp := st.parts[k]; sp != nil {
				sp.held[member], _ = cutRange(sp.held[member], r)
				if len(sp.held[member]) == 0 {
					delete(sp.held, member)
				}
			}
		}
		if !ev.Responded() {
			continue
		}
		c := st.count(member, k)
		if code := errOf(k); code != 0 {
			c.ackFailed += a.Accepted + a.Released + a.Rejected
			g.requestError(ev, api, member, code)
			continue
		}
		c.accepted += a.Accepted
		c.released += a.Released
		c.rejected += a.Rejected
	}
}

// acquire records a range a member acquired. Delivered before, it may be
// records another member held: one that left or was fenced holding them,
// or one whose acquisition lock expired.
func (g *group) acquire(ev *decode.Event, member string, k shareKey, r decode.AcquiredRange) {
	st := g.consumer.share
	n := r.Records()
	if n <= 0 {
		return
	}
	c := st.count(member, k)
	c.acquired += n
	sp := st.part(k)
	or := offRange{r.FirstOffset, r.LastOffset}
	if r.DeliveryCount > 1 {
		c.redelivered += n
		kept := sp.abandoned[:0]
		for _, a := range sp.abandoned {
			var cut []offRange
			a.ranges, cut = cutRange(a.ranges, or)
			if len(cut) > 0 {
				g.redelivered(ev, redelivery{key: k, ranges: cut, deliveryCount: r.DeliveryCount, to: member,
					from: a.member, how: a.how, departedAt: a.at})
			}
			if len(a.ranges) > 0 {
				kept = append(kept, a)
			}
		}
		clear(sp.abandoned[len(kept):])
		sp.abandoned = kept
		for _, holder := range sortedKeys(sp.held) {
			if holder == member {
				continue
			}
			rest, cut := cutRange(sp.held[holder], or)
			if len(cut) == 0 {
				continue
			}
			if len(rest) == 0 {
				delete(sp.held, holder)
			} else {
				sp.held[holder] = rest
			}
			g.redelivered(ev, redelivery{key: k, ranges: cut, deliveryCount: r.DeliveryCount, to: member,
				from: holder, how: "lock_expired"})
		}
	}
	if rs := sp.held[member]; len(rs) >= maxHeldRanges {
		sp.lost++
		sp.held[member] = rs[1:]
	}
	sp.held[member] = addRange(sp.held[member], or)
}

// redelivered tells and keeps one redelivery.
func (g *group) redelivered(ev *decode.Event, rd redelivery) {
	st := g.consumer.share
	rd.at = ev.RespondedAt
	topic := g.topicName(rd.key.topic)
	n := countRanges(rd.ranges)
	why := ""
	switch rd.how {
	case "lock_expired":
		why = fmt.Sprintf("%s's acquisition lock expired before it acknowledged them", rd.from)
		if cm := g.consumer.members[rd.from]; cm != nil && cm.active && !cm.lastAt.IsZero() {
			why += fmt.Sprintf(" (its last heartbeat answered at %s)", clock(cm.lastAt, g.e.cfg.Location))
		}
	default:
		why = fmt.Sprintf("%s held them unacknowledged when it %s at %s", rd.from, rd.how, clock(rd.departedAt, g.e.cfg.Location))
	}
	g.emit(rd.at, KindRedelivered, g.consumer.epoch, rd.to, fmt.Sprintf("%s got %s[%d] offsets %s again (%d records, delivery %d): %s; processed twice if %s had processed them",
		rd.to, topic, rd.key.partition, rangesString(rd.ranges), n, rd.deliveryCount, why, rd.from),
		map[string]any{"topic": topic, "partition": rd.key.partition, "records": n, "delivery_count": rd.deliveryCount,
			"from_member": rd.from, "how": rd.how})
	if len(st.redeliveries) >= maxShareRedeliveries {
		st.dropped++
		return
	}
	st.redeliveries = append(st.redeliveries, rd)
}
