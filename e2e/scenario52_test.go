//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestScenario52: KIP-848 commits at an epoch behind the member's
// (KIP-1251's assignment epochs, Kafka 4.3+), on the real broker, through
// kproxy. Two members of a consumer group, driven by raw requests as a
// client's own would be sent (ConsumerGroupHeartbeat v1 with member ids of
// their own, OffsetCommit at the newest version both sides support):
// member 1 is assigned both partitions of kip1251 at epoch E1; member 2
// joins; member 1 gives up one partition and reaches epoch E2 keeping the
// other. Member 1 then commits both partitions at E1, as a commit in flight
// when its epoch moved would. The partition member 2 now holds fails the
// check (STALE_MEMBER_EPOCH): that is the fencing the epoch is for. Kafka
// 4.3+ checks each partition against its assignment epoch (KIP-1251), but
// the first one that fails fails the whole OffsetCommit
// (OffsetMetadataManager.commitOffset), so the kept one is refused too.
// Member 1 then commits the kept partition alone at E1: KIP-1251 takes it,
// assigned at E1 (before 4.3 the coordinator refuses any epoch but the
// member's). The story must tell both commits: the commit entries (JSON
// lines and text) with each partition's result, the member's epoch E2,
// each partition's assignment epoch from member 1's heartbeats (E1 for the
// kept one, -1 for member 2's), and what the answer means.
func TestScenario52(t *testing.T) {
	topic, group := "kip1251", "kip1251_group"
	freshTopic(t, topic, 2, group)
	k := startKproxyWith(t, true, brokerAddr, "--admin", proxyAdmin)
	bs := brokerAddr
	if k != nil {
		bs = bootstrap(k)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ClientID("kip1251-member"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// The topic ids, for the heartbeats' owned partitions.
	ids := map[string][16]byte{}
	md := kmsg.NewPtrMetadataRequest()
	mdt := kmsg.NewMetadataRequestTopic()
	mdt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mdt)
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range mresp.Topics {
		if mt.ErrorCode != 0 {
			t.Fatalf("metadata of %s: %v", *mt.Topic, kerr.ErrorForCode(mt.ErrorCode))
		}
		ids[*mt.Topic] = mt.TopicID
	}

	newMember := func() *hbMember {
		var raw [16]byte
		rand.Read(raw[:])
		return &hbMember{cl: cl, group: group, id: base64.RawURLEncoding.EncodeToString(raw[:]), names: map[[16]byte]string{ids[topic]: topic}}
	}
	m1, m2 := newMember(), newMember()
	e1 := m1.until(t, ctx, func() bool { return len(m1.heartbeat(t, ctx)[topic]) == 2 })
	// m2 joins: the coordinator moves one partition to it. m1 keeps the
	// other at its old assignment epoch and reaches the group's epoch
	// once it no longer owns the one it gives up.
	e2 := m1.until(t, ctx, func() bool {
		a1, a2 := m1.heartbeat(t, ctx), m2.heartbeat(t, ctx)
		return len(a1[topic]) == 1 && len(a2[topic]) == 1 && m1.epoch > e1
	})
	kept, moved := m1.assignedOf(topic)[0], m2.assignedOf(topic)[0]
	t.Logf("member 1 %s: %s[0 1] at epoch %d; member 2 %s joined; member 1 at epoch %d keeps %s[%d], member 2 has %s[%d]",
		m1.id, topic, e1, m2.id, e2, topic, kept, topic, moved)

	// Member 1 commits at its old epoch, as a commit sent before its
	// epoch moved would: both partitions, then the kept one alone.
	commit := func(parts ...int32) map[int32]int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.MemberID, oc.Generation = group, m1.id, e1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, ids[topic]
		for _, p := range parts {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 5
			rt.Partitions = append(rt.Partitions, rp)
		}
		oc.Topics = append(oc.Topics, rt)
		ocr, err := oc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int32]int16{}
		for _, rt := range ocr.Topics {
			for _, rp := range rt.Partitions {
				got[rp.Partition] = rp.ErrorCode
				t.Logf("OffsetCommit v%d at epoch %d: %s[%d] %v", ocr.Version, e1, topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
		return got
	}
	both := commit(kept, moved)
	alone := commit(kept)
	// Both are refused: member 2's partition fails the check, which fails
	// the request. The kept one alone is taken on 4.3+ (KIP-1251).
	stale := kerr.StaleMemberEpoch.Code
	if both[moved] != stale || both[kept] != stale {
		t.Errorf("commit at epoch %d of %s[%d] (member 2's) and [%d]: %v, %v; want STALE_MEMBER_EPOCH for both, the request failing whole",
			e1, topic, moved, kept, kerr.ErrorForCode(both[moved]), kerr.ErrorForCode(both[kept]))
	}
	wantAlone := stale
	if kafkaAtLeast(4, 3) {
		wantAlone = 0
	}
	if alone[kept] != wantAlone {
		t.Errorf("commit at epoch %d of %s[%d] alone, member 1's since then: %v; want %v", e1, topic, kept, kerr.ErrorForCode(alone[kept]), kerr.ErrorForCode(wantAlone))
	}
	m2.leave(t, ctx)
	m1.leave(t, ctx)
	if k == nil {
		return
	}
	k.finish()

	// The story: replay's entries (JSON lines and text).
	lines, _ := runKproxyCmd(t, "replay", k.journal, "--format", "jsonl")
	text, _ := runKproxyCmd(t, "replay", k.journal, "--format", "text")
	for name, b := range map[string][]byte{"timeline.jsonl": lines, "timeline.txt": text} {
		if err := os.WriteFile(filepath.Join(runDir(t), name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var entries []*commitEntry
	for _, line := range strings.Split(string(lines), "\n") {
		if !strings.Contains(line, `"kind":"commit"`) {
			continue
		}
		e := &commitEntry{}
		if err := json.Unmarshal([]byte(line), e); err != nil {
			t.Fatalf("replay --format jsonl: %v in %s", err, line)
		}
		if e.Group == group && e.MemberID == m1.id {
			entries = append(entries, e)
		}
	}
	if len(entries) != 2 {
		t.Fatalf("%d commit entries of member 1 (%s) in the story (%s); want 2", len(entries), m1.id, filepath.Join(runDir(t), "timeline.jsonl"))
	}
	ks, ms := strconv.Itoa(int(kept)), strconv.Itoa(int(moved))
	check := func(entry *commitEntry, got map[int32]int16, wantEpochs map[string]int32, wantText string) {
		f := entry.Fields
		if f.CommitGeneration != e1 || f.MemberEpoch == nil || *f.MemberEpoch != e2 {
			t.Errorf("commit entry: epoch %d, member epoch %s; want %d behind the member's %d", f.CommitGeneration, deref(f.MemberEpoch), e1, e2)
		}
		if a := f.AssignmentEpochs[topic]; len(a) != len(wantEpochs) || !maps.Equal(a, wantEpochs) {
			t.Errorf("commit entry: assignment epochs %v; want %s %v (%s[%d] kept since %d, %s[%d] member 2's)", f.AssignmentEpochs, topic, wantEpochs, topic, kept, e1, topic, moved)
		}
		for p, code := range got {
			want := ""
			if code != 0 {
				want = kerr.ErrorForCode(code).(*kerr.Error).Message
			}
			if g := f.Errors[topic][strconv.Itoa(int(p))]; g != want {
				t.Errorf("commit entry: %s[%d] error %q; the broker answered %q", topic, p, g, want)
			}
		}
		if !strings.Contains(entry.Text, wantText) || !strings.Contains(string(text), wantText) {
			t.Errorf("commit entry %q; want it, in the JSON lines and the text timeline, to tell %q", entry.Text, wantText)
		}
		t.Logf("the story: %s", entry.Text)
	}
	parts := fmt.Sprintf("%s[%d] assigned at epoch %d, %s[%d] not assigned to it", topic, kept, e1, topic, moved)
	if kept > moved {
		parts = fmt.Sprintf("%s[%d] not assigned to it, %s[%d] assigned at epoch %d", topic, moved, topic, kept, e1)
	}
	check(entries[0], both, map[string]int32{ks: e1, ms: -1}, fmt.Sprintf("epoch %d behind the member's %d (%s): refused whole: a partition assigned to the member after the commit's epoch or not at all fails KIP-1251's check", e1, e2, parts))
	why := "taken, as KIP-1251's assignment epochs (Kafka 4.3+) allow"
	if alone[kept] != 0 {
		why = "refused, although by the member's heartbeats each was assigned at or before the commit's epoch"
	}
	check(entries[1], alone, map[string]int32{ks: e1}, fmt.Sprintf("epoch %d behind the member's %d (%s[%d] assigned at epoch %d): %s", e1, e2, topic, kept, e1, why))
}

// commitEntry is a commit entry of `kproxy replay --format jsonl`, as far
// as scenario 52 reads it.
type commitEntry struct {
	Group    string `json:"group"`
	Kind     string `json:"kind"`
	MemberID string `json:"member_id"`
	Text     string `json:"text"`
	Fields   struct {
		CommitGeneration int32                        `json:"commit_generation"`
		MemberEpoch      *int32                       `json:"member_epoch"`
		AssignmentEpochs map[string]map[string]int32  `json:"assignment_epochs"`
		Errors           map[string]map[string]string `json:"errors"`
	} `json:"fields"`
}

// hbMember is a KIP-848 member driven by raw ConsumerGroupHeartbeats.
type hbMember struct {
	cl       *kgo.Client
	group    string
	id       string
	epoch    int32
	assigned []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic
	names    map[[16]byte]string
}

// heartbeat sends one heartbeat subscribed to topics, owning what it was
// assigned, and returns the assignment by topic name.
func (m *hbMember) heartbeat(t *testing.T, ctx context.Context) map[string][]int32 {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	for _, name := range m.names {
		req.SubscribedTopicNames = append(req.SubscribedTopicNames, name)
	}
	req.RebalanceTimeoutMillis = 30000
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, a := range m.assigned {
		rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		rt.TopicID, rt.Partitions = a.TopicID, slices.Clone(a.Partitions)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ConsumerGroupHeartbeat at epoch %d: %v %s", m.epoch, kerr.ErrorForCode(resp.ErrorCode), derefStr(resp.ErrorMessage))
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.assigned = resp.Assignment.Topics
	}
	out := map[string][]int32{}
	for _, a := range m.assigned {
		out[m.names[a.TopicID]] = slices.Sorted(slices.Values(a.Partitions))
	}
	return out
}

// until calls step every 200 ms until it reports done, and returns the
// member's epoch then.
func (m *hbMember) until(t *testing.T, ctx context.Context, step func() bool) int32 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !step() {
		if time.Now().After(deadline) {
			t.Fatalf("member %s: assigned %v at epoch %d after 30 s", m.id, m.assignedOf(""), m.epoch)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return m.epoch
}

// assignedOf is the member's assigned partitions of topic, sorted (all
// topics' with "").
func (m *hbMember) assignedOf(topic string) []int32 {
	var out []int32
	for _, a := range m.assigned {
		if topic == "" || m.names[a.TopicID] == topic {
			out = append(out, a.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

// leave sends the leaving heartbeat (epoch -1).
func (m *hbMember) leave(t *testing.T, ctx context.Context) {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, -1
	if _, err := req.RequestWith(ctx, m.cl); err != nil {
		t.Fatal(err)
	}
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
