package timeline

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// base is the time every synthetic stream starts at.
var base = time.Date(2024, 3, 7, 14, 2, 0, 0, time.UTC)

// sec is base plus s seconds.
func sec(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }

// client is the connection facts of one consumer.
type client struct{ id, addr string }

// script builds a synthetic event stream for one or more groups.
type script struct {
	group string
	evs   []decode.Event
}

func newScript(group string) *script { return &script{group: group} }

// ev appends an event of api for c, requested at req and answered at resp
// seconds (resp < 0: no response).
func (s *script) ev(c client, api int16, req, resp float64) *decode.Event {
	e := decode.Event{At: sec(req), ClientID: c.id, ClientAddr: c.addr, APIKey: api, Group: s.group, BrokerID: 1}
	if resp >= 0 {
		e.RespondedAt = sec(resp)
	}
	s.evs = append(s.evs, e)
	return &s.evs[len(s.evs)-1]
}

// consumerSub is a ConsumerProtocolSubscription v1 for topics.
func consumerSub(topics ...string) *decode.Subscription {
	return &decode.Subscription{Version: 1, Topics: topics, Generation: -1}
}

// jg is a successful JoinGroup of member id into generation gen with the
// range assignor on round_topic; members are listed when id is the leader.
func jg(id string, gen int32, leader string, members ...string) decode.JoinGroup {
	j := decode.JoinGroup{MemberID: id, ProtocolType: "consumer", SessionTimeout: 10 * time.Second,
		RebalanceTimeout: 30 * time.Second, Protocols: []decode.JoinProtocol{{Name: "range", Subscription: consumerSub("round_topic")}},
		Generation: gen, ProtocolName: "range", Leader: leader, AssignedMemberID: id}
	for _, m := range members {
		j.Members = append(j.Members, decode.JoinMember{MemberID: m, Subscription: consumerSub("round_topic")})
	}
	return j
}

// join appends a JoinGroup.
func (s *script) join(c client, req, resp float64, j decode.JoinGroup) {
	s.ev(c, 11, req, resp).JoinGroup = &j
}

// memberIDRequired appends a first JoinGroup answered MEMBER_ID_REQUIRED
// with the id the coordinator assigned.
func (s *script) memberIDRequired(c client, req, resp float64, assigned string) {
	j := jg("", -1, "")
	j.AssignedMemberID, j.ErrorCode, j.ProtocolName = assigned, errMemberIDRequired, ""
	s.join(c, req, resp, j)
}

// tp builds partitions of one topic.
func tp(topic string, ps ...int32) []decode.TopicPartitions {
	return []decode.TopicPartitions{{Topic: topic, Partitions: ps}}
}

// sync appends a SyncGroup of member id in gen getting assigned; plan is
// the leader's plan (nil for followers).
func (s *script) sync(c client, req, resp float64, id string, gen int32, assigned []decode.TopicPartitions, plan map[string][]decode.TopicPartitions) {
	sg := &decode.SyncGroup{MemberID: id, Generation: gen, ProtocolType: "consumer", ProtocolName: "range",
		Assignment: &decode.Assignment{Partitions: assigned}}
	for _, m := range sortedKeys(plan) {
		sg.Plan = append(sg.Plan, decode.MemberAssignment{MemberID: m, Assignment: &decode.Assignment{Partitions: plan[m]}})
	}
	s.ev(c, 14, req, resp).SyncGroup = sg
}

// syncErr appends a SyncGroup answered with an error.
func (s *script) syncErr(c client, req, resp float64, id string, gen int32, code int16) {
	s.ev(c, 14, req, resp).SyncGroup = &decode.SyncGroup{MemberID: id, Generation: gen, ErrorCode: code}
}

// hb appends a Heartbeat with its error code.
func (s *script) hb(c client, req, resp float64, id string, gen int32, code int16) {
	s.ev(c, 12, req, resp).Heartbeat = &decode.Heartbeat{MemberID: id, Generation: gen, ErrorCode: code}
}

// hbs appends heartbeats of id every 3 s from from to to (exclusive).
func (s *script) hbs(c client, id string, gen int32, from, to float64) {
	for t := from; t < to; t += 3 {
		s.hb(c, t, t+0.001, id, gen, 0)
	}
}

// leave appends a LeaveGroup v5 of id with reason.
func (s *script) leave(c client, req, resp float64, id, reason string) {
	s.ev(c, 13, req, resp).LeaveGroup = &decode.LeaveGroup{Members: []decode.LeavingMember{{MemberID: id, Reason: reason}}}
}

// commit appends an OffsetCommit of one topic: offsets by partition, codes
// by partition (absent: 0).
func (s *script) commit(c client, req, resp float64, id string, gen int32, topic string, offsets map[int32]int64, codes map[int32]int16) {
	ct := decode.CommitTopic{Topic: topic}
	for _, p := range sortedKeys(offsets) {
		ct.Partitions = append(ct.Partitions, decode.CommitPartition{Partition: p, Offset: offsets[p], ErrorCode: codes[p]})
	}
	s.ev(c, 8, req, resp).OffsetCommit = &decode.OffsetCommit{MemberID: id, Generation: gen, Topics: []decode.CommitTopic{ct}}
}

// events returns the script's events in the order the proxy would hand
// them over: by completion (response time, or request time without one),
// keeping the script's order for equal times.
func (s *script) events() []decode.Event {
	evs := append([]decode.Event(nil), s.evs...)
	done := func(e decode.Event) time.Time {
		if e.RespondedAt.IsZero() {
			return e.At
		}
		return e.RespondedAt
	}
	slices.SortStableFunc(evs, func(a, b decode.Event) int { return done(a).Compare(done(b)) })
	return evs
}

// run feeds the events to a new engine, closes it at closeAt seconds (when
// >= 0) and returns the entries and the report.
func run(t *testing.T, cfg Config, evs []decode.Event, closeAt float64) ([]Entry, *Report, *Engine) {
	t.Helper()
	var entries []Entry
	cfg.OnEntry = func(e Entry) { entries = append(entries, e) }
	e := New(cfg)
	for _, ev := range evs {
		e.Add(ev)
	}
	if closeAt >= 0 {
		e.Close(sec(closeAt))
	}
	return entries, e.Report(), e
}

// entryLines renders entries in console form.
func entryLines(entries []Entry) string {
	var b bytes.Buffer
	for _, e := range entries {
		WriteEntryText(&b, e)
	}
	return b.String()
}

// kinds counts entries by kind.
func kinds(entries []Entry) map[Kind]int {
	m := map[Kind]int{}
	for _, e := range entries {
		m[e.Kind]++
	}
	return m
}

// findEntry returns the first entry of kind whose text contains sub.
func findEntry(entries []Entry, kind Kind, sub string) *Entry {
	for i := range entries {
		if entries[i].Kind == kind && strings.Contains(entries[i].Text, sub) {
			return &entries[i]
		}
	}
	return nil
}

// genOf returns generation num of group in r, failing the test if absent.
func genOf(t *testing.T, r *Report, group string, num int32) GenerationReport {
	t.Helper()
	for _, g := range r.Groups {
		if g.Group != group {
			continue
		}
		for _, gen := range g.Generations {
			if gen.Generation == num {
				return gen
			}
		}
	}
	t.Fatalf("group %s generation %d not in report", group, num)
	return GenerationReport{}
}

func memberOf(t *testing.T, gen GenerationReport, id string) MemberReport {
	t.Helper()
	for _, m := range gen.Members {
		if m.MemberID == id {
			return m
		}
	}
	t.Fatalf("member %s not in generation %d", id, gen.Generation)
	return MemberReport{}
}
