package diagnose

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// base is the time every synthetic stream starts at.
var base = time.Date(2024, 3, 7, 14, 2, 0, 0, time.UTC)

// sec is base plus s seconds.
func sec(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }

// client is the connection facts of one consumer.
type client struct{ id, addr string }

// item is one exchange of a script: its events, and the exchange itself
// for the APIs read from the exchange (Fetch, ApiVersions).
type item struct {
	ev *decode.Event
	x  *decode.Exchange
}

// when is the request time of the item's exchange (its event's start).
func (it item) when() time.Time {
	if it.x != nil {
		return it.x.RequestAt
	}
	return it.ev.At
}

// script builds a synthetic stream for one group.
type script struct {
	group string
	items []item
	// session and rebalance are the timeouts of the JoinGroups jg builds.
	session, rebalance time.Duration
}

func newScript(group string) *script {
	return &script{group: group, session: 10 * time.Second, rebalance: 30 * time.Second}
}

// versions are the API versions of the scripts' events: what a current
// Java client sends.
var versions = map[int16]int16{8: 8, 9: 8, 11: 9, 12: 4, 13: 5, 14: 5}

// ev appends an event of api for c, requested at req and answered at resp
// seconds (resp < 0: no response).
func (s *script) ev(c client, api int16, req, resp float64) *decode.Event {
	e := &decode.Event{At: sec(req), ClientID: c.id, ClientAddr: c.addr, APIKey: api, APIVersion: versions[api], Group: s.group, BrokerID: 1}
	if resp >= 0 {
		e.RespondedAt = sec(resp)
	}
	s.items = append(s.items, item{ev: e})
	return e
}

func sub(topics ...string) *decode.Subscription {
	return &decode.Subscription{Version: 1, Topics: topics, Generation: -1}
}

// jg is a successful JoinGroup of member id into generation gen with the
// range assignor on topic t; members are listed when id is the leader.
func (s *script) jg(id string, gen int32, leader string, members ...string) decode.JoinGroup {
	j := decode.JoinGroup{MemberID: id, ProtocolType: "consumer", SessionTimeout: s.session,
		RebalanceTimeout: s.rebalance, Protocols: []decode.JoinProtocol{{Name: "range", Subscription: sub("t")}},
		Generation: gen, ProtocolName: "range", Leader: leader, AssignedMemberID: id}
	for _, m := range members {
		j.Members = append(j.Members, decode.JoinMember{MemberID: m, Subscription: sub("t")})
	}
	return j
}

func (s *script) join(c client, req, resp float64, j decode.JoinGroup) {
	jj := j
	s.ev(c, 11, req, resp).JoinGroup = &jj
}

func parts(topic string, ps ...int32) []decode.TopicPartitions {
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

func (s *script) hb(c client, req, resp float64, id string, gen int32, code int16) {
	s.ev(c, 12, req, resp).Heartbeat = &decode.Heartbeat{MemberID: id, Generation: gen, ErrorCode: code}
}

// hbs appends heartbeats of id every every seconds from from to to
// (exclusive).
func (s *script) hbs(c client, id string, gen int32, from, to, every float64) {
	for t := from; t < to; t += every {
		s.hb(c, t, t+0.001, id, gen, 0)
	}
}

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

// txnCommit appends a TxnOffsetCommit of one topic in transaction txn,
// producer pid and epoch.
func (s *script) txnCommit(c client, req, resp float64, id string, gen int32, txn string, pid int64, epoch int16,
	topic string, offsets map[int32]int64, codes map[int32]int16) {
	s.commit(c, req, resp, id, gen, topic, offsets, codes)
	e := s.items[len(s.items)-1].ev
	oc := e.OffsetCommit
	e.APIKey, e.APIVersion, e.OffsetCommit = 28, 5, nil
	e.TxnOffsetCommit = &decode.TxnOffsetCommit{TransactionalID: txn, ProducerID: pid, ProducerEpoch: epoch,
		MemberID: oc.MemberID, Generation: oc.Generation, Topics: oc.Topics}
}

// endTxn appends an EndTxn of transaction txn, producer pid and epoch,
// answered without error.
func (s *script) endTxn(c client, req, resp float64, txn string, pid int64, epoch int16, commit bool) {
	e := s.ev(c, 26, req, resp)
	e.Group, e.APIVersion = "", 5
	e.EndTxn = &decode.EndTxn{TransactionalID: txn, ProducerID: pid, ProducerEpoch: epoch, Commit: commit,
		NextProducerID: pid, NextProducerEpoch: epoch + 1}
}

// requestExchange frames req as the proxy hands it over, without response.
func requestExchange(c client, req kmsg.Request, at float64) *decode.Exchange {
	b := kbin.AppendInt16(nil, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, 1)
	b = kbin.AppendNullableString(b, &c.id)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return &decode.Exchange{ClientAddr: c.addr, ClientID: c.id, BrokerID: 1, APIKey: req.Key(), APIVersion: req.GetVersion(),
		CorrelationID: 1, RequestAt: sec(at), Request: req.AppendTo(b)}
}

// fetch appends a consumer's Fetch v12 request of topic at offsets by
// partition; its response is never needed.
func (s *script) fetch(c client, at float64, topic string, offsets map[int32]int64) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	for _, p := range sortedKeys(offsets) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset = p, offsets[p]
		t.Partitions = append(t.Partitions, fp)
	}
	req.Topics = append(req.Topics, t)
	s.items = append(s.items, item{x: requestExchange(c, req, at)})
}

// software appends an ApiVersions v3 request announcing name and version.
func (s *script) software(c client, at float64, name, version string) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = name, version
	s.items = append(s.items, item{x: requestExchange(c, req, at)})
}

// ordered returns the items in the order the proxy would hand them over:
// by completion, keeping the script's order for equal times.
func (s *script) ordered() []item {
	items := slices.Clone(s.items)
	done := func(it item) time.Time {
		if it.x != nil {
			return it.x.RequestAt
		}
		if it.ev.RespondedAt.IsZero() {
			return it.ev.At
		}
		return it.ev.RespondedAt
	}
	slices.SortStableFunc(items, func(a, b item) int { return done(a).Compare(done(b)) })
	return items
}

// diagnoseScript runs the script through a timeline engine and a
// diagnosis engine as the pipeline does (timeline first, its entries to
// the diagnosis as they come), closes both at closeAt seconds, and
// returns the findings and the live warnings as they were raised.
func diagnoseScript(t *testing.T, cfg Config, s *script, closeAt float64) (findings, live []Finding) {
	return diagnoseScriptTicking(t, cfg, s, closeAt, 0)
}

// diagnoseScriptTicking is diagnoseScript with, when tick > 0, a call to
// Advance every tick seconds between the exchanges, as serve's ticker does.
func diagnoseScriptTicking(t *testing.T, cfg Config, s *script, closeAt, tick float64) (findings, live []Finding) {
	t.Helper()
	cfg.OnFinding = func(f Finding) { live = append(live, f) }
	d := New(cfg, timeline.Config{Groups: cfg.Groups})
	tl := d.Timeline()
	clock := 0.0
	for _, it := range s.ordered() {
		if tick > 0 {
			var at time.Time
			if it.x != nil {
				at = it.x.RequestAt
			} else {
				at = later(it.ev.At, it.ev.RespondedAt)
			}
			for ; sec(clock).Before(at); clock += tick {
				d.Advance(sec(clock))
			}
		}
		feed(d, it)
	}
	tl.Close(sec(closeAt))
	d.Advance(sec(closeAt))
	return d.Findings(), live
}

// feed hands d one item as the pipeline does: its events (through d to
// its timeline), then the exchange.
func feed(d *Engine, it item) {
	if it.x != nil {
		d.AddDecoded(decode.NewDecoded(it.x, nil))
		return
	}
	evs := []decode.Event{*it.ev}
	d.AddEvents(evs)
	d.AddDecoded(&decode.Decoded{Events: evs})
}

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s", path, got)
	}
}
