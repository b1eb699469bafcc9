package timeline

import (
	"fmt"
	"time"
)

// ShareReport is a share group's records (KIP-932), from the ShareFetch and
// ShareAcknowledge exchanges kproxy saw; the records themselves are never
// read.
type ShareReport struct {
	// AcquisitionLockTimeoutMs is how long a member holds records it
	// acquired before the broker may deliver them to another, as the last
	// ShareFetch response said (v1+); null unknown.
	AcquisitionLockTimeoutMs *float64 `json:"acquisitionLockTimeoutMs"`
	// Totals are the group's counts, over every member and partition.
	Totals ShareCountsReport `json:"totals"`
	// Members are each member's counts, sorted by member id.
	Members []ShareMemberReport `json:"members"`
	// Redeliveries are the records a member held unacknowledged that
	// another member acquired again, in the order seen (the first 100).
	Redeliveries        []RedeliveryReport `json:"redeliveries"`
	RedeliveriesDropped int                `json:"redeliveriesDropped"` // redeliveries beyond the first 100, not kept
}

// ShareCountsReport counts records (offsets) of a share group.
type ShareCountsReport struct {
	Acquired    int64 `json:"acquired"`    // acquired by ShareFetch responses, redeliveries included
	Redelivered int64 `json:"redelivered"` // acquired with a delivery count above 1: delivered before
	Accepted    int64 `json:"accepted"`    // acknowledged as processed (ACCEPT), the broker agreeing
	Released    int64 `json:"released"`    // given back to be delivered again (RELEASE)
	Rejected    int64 `json:"rejected"`    // refused as unprocessable, never delivered again (REJECT)
	// AcknowledgeFailed counts acknowledgements the broker refused (for
	// one, INVALID_RECORD_STATE: the acquisition lock had expired).
	AcknowledgeFailed int64 `json:"acknowledgeFailed"`
	// Unacknowledged counts records acquired and not acknowledged by the
	// end of the input: still held (members), or held by members gone
	// and not yet seen delivered again (group totals include those).
	Unacknowledged int64 `json:"unacknowledged"`
}

// ShareMemberReport is one member's records.
type ShareMemberReport struct {
	MemberID          string `json:"memberId"`
	ShareCountsReport        // the member's counts over its partitions
	// Partitions are the member's counts per partition, sorted by topic
	// and partition.
	Partitions []SharePartitionReport `json:"partitions"`
}

// SharePartitionReport is one member's records on one partition.
type SharePartitionReport struct {
	Topic             string `json:"topic"` // the topic name, or its id when no Metadata named it
	Partition         int32  `json:"partition"`
	ShareCountsReport        // the member's counts on this partition
}

// RedeliveryReport is offsets a member held unacknowledged that another
// member acquired again: processed twice if the first had processed them.
type RedeliveryReport struct {
	At            string  `json:"at"`            // the ShareFetch response that acquired them again
	Topic         string  `json:"topic"`         // the topic name, or its id when no Metadata named it
	Partition     int32   `json:"partition"`     // the partition
	Offsets       string  `json:"offsets"`       // the offset ranges, "10-19 25"
	Records       int64   `json:"records"`       // how many offsets
	DeliveryCount int16   `json:"deliveryCount"` // the highest delivery count among them
	MemberID      string  `json:"memberId"`      // the member that acquired them again
	From          string  `json:"from"`          // the member that held them
	How           string  `json:"how"`           // "left", "fenced" (From departed holding them) or "lock_expired" (its acquisition lock expired)
	DepartedAt    *string `json:"departedAt"`    // when From left or was fenced; null for lock_expired
}

// shareReport renders a share group's records.
func (g *group) shareReport() *ShareReport {
	st := g.consumer.share
	r := &ShareReport{AcquisitionLockTimeoutMs: msPtr(st.lockTimeout, st.lockTimeout > 0),
		Members: []ShareMemberReport{}, Redeliveries: []RedeliveryReport{}, RedeliveriesDropped: st.dropped}
	held := func(member string, k shareKey) int64 {
		if sp := st.parts[k]; sp != nil {
			return countRanges(sp.held[member])
		}
		return 0
	}
	for _, id := range sortedKeys(st.counts) {
		mr := ShareMemberReport{MemberID: id, Partitions: []SharePartitionReport{}}
		keys := make([]shareKey, 0, len(st.counts[id]))
		for k := range st.counts[id] {
			keys = append(keys, k)
		}
		sortShareKeys(keys)
		for _, k := range keys {
			c := st.counts[id][k].report(held(id, k))
			mr.Partitions = append(mr.Partitions, SharePartitionReport{Topic: g.topicName(k.topic), Partition: k.partition, ShareCountsReport: c})
			mr.add(c)
		}
		r.Members = append(r.Members, mr)
		r.Totals.add(mr.ShareCountsReport)
	}
	for _, sp := range st.parts {
		for _, a := range sp.abandoned {
			r.Totals.Unacknowledged += countRanges(a.ranges)
		}
	}
	for _, rd := range st.redeliveries {
		var departed *string
		if rd.how != "lock_expired" {
			departed = stampPtr(rd.departedAt)
		}
		r.Redeliveries = append(r.Redeliveries, RedeliveryReport{At: stamp(rd.at), Topic: g.topicName(rd.key.topic),
			Partition: rd.key.partition, Offsets: rangesString(rd.ranges), Records: countRanges(rd.ranges),
			DeliveryCount: rd.deliveryCount, MemberID: rd.to, From: rd.from, How: rd.how, DepartedAt: departed})
	}
	return r
}

func (c *shareCounts) report(unacknowledged int64) ShareCountsReport {
	return ShareCountsReport{Acquired: c.acquired, Redelivered: c.redelivered, Accepted: c.accepted, Released: c.released,
		Rejected: c.rejected, AcknowledgeFailed: c.ackFailed, Unacknowledged: unacknowledged}
}

func (c *ShareCountsReport) add(o ShareCountsReport) {
	c.Acquired += o.Acquired
	c.Redelivered += o.Redelivered
	c.Accepted += o.Accepted
	c.Released += o.Released
	c.Rejected += o.Rejected
	c.AcknowledgeFailed += o.AcknowledgeFailed
	c.Unacknowledged += o.Unacknowledged
}

// shareLines renders a share group's records for the text report: the
// totals, each member's, then each redelivery.
func shareLines(r *ShareReport, loc *time.Location) []string {
	lock := "unknown"
	if r.AcquisitionLockTimeoutMs != nil {
		lock = human(time.Duration(*r.AcquisitionLockTimeoutMs * float64(time.Millisecond)))
	}
	out := []string{fmt.Sprintf("share records (acquisition lock %s): %s", lock, r.Totals.text())}
	for _, m := range r.Members {
		out = append(out, fmt.Sprintf("  %s: %s", m.MemberID, m.text()))
		for _, p := range m.Partitions {
			out = append(out, fmt.Sprintf("    %s[%d]: %s", p.Topic, p.Partition, p.text()))
		}
	}
	for _, rd := range r.Redeliveries {
		from := rd.From + "'s acquisition lock expired"
		if rd.DepartedAt != nil {
			from = fmt.Sprintf("%s %s at %s holding them", rd.From, rd.How, clockOf(rd.DepartedAt, loc))
		}
		out = append(out, fmt.Sprintf("  redelivered %s %s[%d] %s (%d records, delivery %d) to %s: %s",
			clockOf(&rd.At, loc), rd.Topic, rd.Partition, rd.Offsets, rd.Records, rd.DeliveryCount, rd.MemberID, from))
	}
	if r.RedeliveriesDropped > 0 {
		out = append(out, fmt.Sprintf("  %d more redeliveries not kept", r.RedeliveriesDropped))
	}
	return out
}

func (c ShareCountsReport) text() string {
	return fmt.Sprintf("acquired %d (redelivered %d), accepted %d, released %d, rejected %d, acknowledgements refused %d, unacknowledged %d",
		c.Acquired, c.Redelivered, c.Accepted, c.Released, c.Rejected, c.AcknowledgeFailed, c.Unacknowledged)
}
