package timeline

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// streamsTasks parses "0_0 1_2" into tasks by subtopology; "-" is nil
// (unchanged), "" none.
func streamsTasks(spec string) []decode.StreamsTasks {
	if spec == "-" {
		return nil
	}
	out := []decode.StreamsTasks{}
	for _, f := range strings.Fields(spec) {
		sub, part, _ := strings.Cut(f, "_")
		p, _ := strconv.Atoi(part)
		i := slices.IndexFunc(out, func(t decode.StreamsTasks) bool { return t.Subtopology == sub })
		if i < 0 {
			out = append(out, decode.StreamsTasks{Subtopology: sub})
			i = len(out) - 1
		}
		out[i].Partitions = append(out[i].Partitions, int32(p))
	}
	return out
}

// streamsScript: a Kafka Streams application of two subtopologies (0 and
// 1, three partitions each) as a streams group.
//
//	t=1   A joins; the coordinator answers epoch 1, MISSING_SOURCE_TOPICS
//	t=3   the topics exist: status cleared, A gets all six tasks
//	t=10  B joins (epoch 2): standby 0_1, warm-ups 0_2 1_2
//	t=20  B's warm-ups caught up (epoch 3): A revokes 0_2 1_2, B gets them
//	      active, promoted
//	t=30  C joins (epoch 4): A revokes 1_1, C gets it
//	t=45  C is fenced (FENCED_MEMBER_EPOCH), losing 1_1
//	t=50  A gets 1_1 back (epoch 5), from C
//	t=52  B gets a warm-up 1_0 (epoch 6) that never catches up (lag 5000)
//	t=55  a describe: Stable, group epoch 6, assignment epoch 6
//	t=58  B leaves with 0_2 1_2 active; A gets 0_2 back (epoch 7), 1_2
//	      stays on no one until the end (t=60)
func streamsScript() *script {
	s := newScript("streams")
	type hbArgs struct {
		epoch, resp             int32
		active, standby, warmup string
		status                  []decode.StreamsStatus
		code                    int16
		offsets, ends           []decode.StreamsTaskOffset
	}
	process := map[string]string{"A": "proc-a", "B": "proc-b", "C": "proc-c"}
	hb := func(c client, req float64, member string, a hbArgs) {
		h := &decode.StreamsGroupHeartbeat{MemberID: member, MemberEpoch: a.epoch, AssignedMemberID: member,
			AssignedEpoch: a.resp, HeartbeatInterval: 5 * time.Second, AcceptableRecoveryLag: 10000, ErrorCode: a.code,
			Active: streamsTasks(a.active), Standby: streamsTasks(a.standby), Warmup: streamsTasks(a.warmup),
			Status: a.status, TaskOffsets: a.offsets, TaskEndOffsets: a.ends}
		if a.epoch == 0 {
			p, ep := process[member], "localhost:700"+strings.ToLower(member)
			h.ProcessID, h.UserEndpoint = &p, &ep
			h.Topology = &decode.StreamsTopology{Epoch: 0, Subtopologies: []decode.StreamsSubtopology{
				{ID: "0", SourceTopics: []string{"words"}, RepartitionSinkTopics: []string{"app-repartition"}},
				{ID: "1", RepartitionSourceTopics: []string{"app-repartition"}, StateChangelogTopics: []string{"app-counts-changelog"}},
			}}
		}
		s.ev(c, 88, req, req+0.002).StreamsGroupHeartbeat = h
	}
	missing := []decode.StreamsStatus{{Code: decode.StreamsMissingSourceTopics, Detail: "Source topics words are missing."}}
	hb(cA, 1, "A", hbArgs{epoch: 0, resp: 1, active: "", standby: "", warmup: "", status: missing})
	hb(cA, 3, "A", hbArgs{epoch: 1, resp: 1, active: "0_0 0_1 0_2 1_0 1_1 1_2", standby: "", warmup: ""})
	hb(cB, 10, "B", hbArgs{epoch: 0, resp: 2, active: "", standby: "0_1", warmup: "0_2 1_2"})
	hb(cA, 11, "A", hbArgs{epoch: 1, resp: 2, active: "-", standby: "-", warmup: "-"})
	hb(cA, 20, "A", hbArgs{epoch: 2, resp: 2, active: "0_0 0_1 1_0 1_1", standby: "-", warmup: "-"})
	hb(cA, 20.5, "A", hbArgs{epoch: 2, resp: 3, active: "-", standby: "-", warmup: "-"})
	hb(cB, 21, "B", hbArgs{epoch: 2, resp: 3, active: "0_2 1_2", standby: "0_1", warmup: ""})
	hb(cC, 30, "C", hbArgs{epoch: 0, resp: 4, active: "", standby: "", warmup: ""})
	hb(cA, 31, "A", hbArgs{epoch: 3, resp: 3, active: "0_0 0_1 1_0", standby: "-", warmup: "-"})
	hb(cA, 31.5, "A", hbArgs{epoch: 3, resp: 4, active: "-", standby: "-", warmup: "-"})
	hb(cC, 32, "C", hbArgs{epoch: 4, resp: 4, active: "1_1", standby: "", warmup: ""})
	hb(cC, 45, "C", hbArgs{epoch: 4, resp: 4, code: 110})
	hb(cA, 50, "A", hbArgs{epoch: 4, resp: 5, active: "0_0 0_1 1_0 1_1", standby: "-", warmup: "-"})
	hb(cB, 52, "B", hbArgs{epoch: 3, resp: 6, active: "-", standby: "-", warmup: "1_0",
		offsets: []decode.StreamsTaskOffset{{Subtopology: "1", Partition: 0, Offset: 1000}},
		ends:    []decode.StreamsTaskOffset{{Subtopology: "1", Partition: 0, Offset: 6000}}})
	d := s.ev(client{"admin", "127.0.0.1:50009"}, 89, 55, 55.003)
	d.StreamsGroupDescribe = &decode.StreamsGroupDescribe{Described: true, State: "Stable", GroupEpoch: 6, AssignmentEpoch: 6,
		AssignorName: "sticky", Members: []decode.StreamsMember{
			{MemberID: "A", MemberEpoch: 6, ProcessID: "proc-a", Target: decode.StreamsAssignment{Active: streamsTasks("0_0 0_1 1_0 1_1")}},
			{MemberID: "B", MemberEpoch: 6, ProcessID: "proc-b", Target: decode.StreamsAssignment{Active: streamsTasks("0_2 1_2"),
				Standby: streamsTasks("0_1"), Warmup: streamsTasks("1_0")}},
		}}
	hb(cB, 58, "B", hbArgs{epoch: -1, resp: -1})
	hb(cA, 59, "A", hbArgs{epoch: 5, resp: 7, active: "0_0 0_1 0_2 1_0 1_1", standby: "-", warmup: "-"})
	return s
}

// TestStreamsStory checks the streams group's epochs, moves, warm-ups,
// statuses and unassigned tasks against the script.
func TestStreamsStory(t *testing.T) {
	entries, r, _ := run(t, Config{}, streamsScript().events(), 60)
	g := r.Groups[0]
	if g.GroupProtocol != "streams" || g.Streams == nil {
		t.Fatalf("group protocol %q; want a streams group", g.GroupProtocol)
	}
	st := g.Streams
	if st.GroupEpoch != 7 || st.AssignmentEpoch == nil || *st.AssignmentEpoch != 6 || st.State != "Stable" {
		t.Errorf("epochs %d/%v, state %q; want 7/6 Stable", st.GroupEpoch, st.AssignmentEpoch, st.State)
	}
	var epochs []string
	for _, e := range st.Epochs {
		epochs = append(epochs, strconv.Itoa(int(e.Epoch))+":"+e.Trigger.Kind+":"+e.Trigger.Member)
	}
	if want := "1:member_joined:A 2:member_joined:B 3:unknown: 4:member_joined:C 5:member_fenced:C 6:unknown: 7:member_left:B"; strings.Join(epochs, " ") != want {
		t.Errorf("epochs %q; want %q", strings.Join(epochs, " "), want)
	}
	moves := func(epoch int32) string {
		var out []string
		for _, e := range st.Epochs {
			if e.Epoch != epoch {
				continue
			}
			for _, m := range e.Moves {
				out = append(out, m.Task+" "+m.Kind+" "+m.From+">"+m.To+" "+m.Promoted)
			}
		}
		return strings.Join(out, "|")
	}
	for _, c := range []struct {
		epoch int32
		want  string
	}{
		{1, "0_0 active >A |0_1 active >A |0_2 active >A |1_0 active >A |1_1 active >A |1_2 active >A "},
		{2, "0_1 standby >B |0_2 warmup >B |1_2 warmup >B "},
		{3, "0_2 active A>B warmup|1_2 active A>B warmup"},
		{4, "1_1 active A>C "},
		{5, "1_1 active C>A "},
		{6, "1_0 warmup >B "},
		{7, "0_2 active B>A "},
	} {
		if got := moves(c.epoch); got != c.want {
			t.Errorf("epoch %d moves %q; want %q", c.epoch, got, c.want)
		}
	}
	if got := strings.Join(st.UnassignedTasks, " "); got != "1_2" {
		t.Errorf("unassigned %q; want 1_2", got)
	}
	if len(st.Statuses) != 1 || st.Statuses[0].Name != "MISSING_SOURCE_TOPICS" || st.Statuses[0].ClearedAt == nil {
		t.Errorf("statuses %+v; want MISSING_SOURCE_TOPICS, cleared", st.Statuses)
	}
	var warm []string
	for _, w := range st.Warmups {
		s := w.Task + "@" + w.MemberID
		switch {
		case w.PromotedAt != nil:
			s += " promoted"
		case w.EndedAt != nil:
			s += " ended"
		}
		if w.Lag != nil {
			s += " lag " + strconv.FormatInt(*w.Lag, 10)
		}
		warm = append(warm, s)
	}
	if want := "0_2@B promoted|1_2@B promoted|1_0@B ended lag 5000"; strings.Join(warm, "|") != want {
		t.Errorf("warm-ups %q; want %q", strings.Join(warm, "|"), want)
	}
	var status []string
	for _, m := range st.Members {
		status = append(status, m.MemberID+":"+m.Status+":"+strings.Join(m.Tasks.Active, ","))
	}
	if want := "A:active:0_0,0_1,0_2,1_0,1_1 B:left: C:FENCED_MEMBER_EPOCH:"; strings.Join(status, " ") != want {
		t.Errorf("members %q; want %q", strings.Join(status, " "), want)
	}
	if e := findEntry(entries, KindFenced, "C fenced"); e == nil || e.Failure == nil || e.Failure.API != "StreamsGroupHeartbeat" {
		t.Errorf("no fenced entry for C with its failure: %v", e)
	}
	if findEntry(entries, KindTasksUnassigned, "1_2 (last on B)") == nil {
		t.Errorf("no tasks_unassigned entry naming 1_2 last on B")
	}
}

// TestStreamsSessionTimeoutInferred: B stops heartbeating (frozen); the
// coordinator removes it when its session times out and bumps the epoch
// with no request to say why: the epoch's trigger is B's inferred session
// timeout, and B's tasks move to A.
func TestStreamsSessionTimeoutInferred(t *testing.T) {
	s := newScript("streams")
	hb := func(c client, req float64, member string, epoch, resp int32, active string) {
		s.ev(c, 88, req, req+0.002).StreamsGroupHeartbeat = &decode.StreamsGroupHeartbeat{MemberID: member, MemberEpoch: epoch,
			AssignedMemberID: member, AssignedEpoch: resp, HeartbeatInterval: time.Second, AcceptableRecoveryLag: -1, Active: streamsTasks(active)}
	}
	hb(cA, 1, "A", 0, 1, "0_0 0_1")
	hb(cB, 2, "B", 0, 2, "")
	hb(cA, 3, "A", 1, 2, "0_0")
	hb(cB, 4, "B", 2, 2, "0_1")
	for at := 5.0; at < 15; at++ {
		hb(cA, at, "A", 2, 2, "-")
	}
	hb(cA, 15, "A", 2, 3, "0_0 0_1")
	_, r, _ := run(t, Config{}, s.events(), 16)
	st := r.Groups[0].Streams
	last := st.Epochs[len(st.Epochs)-1]
	if last.Epoch != 3 || last.Trigger.Kind != TriggerSessionTimeout || last.Trigger.Member != "B" || !strings.HasPrefix(last.Trigger.Reason, "inferred: silent for 11") {
		t.Errorf("epoch 3's trigger %+v; want B's session timeout, inferred", last.Trigger)
	}
	if len(last.Moves) != 1 || last.Moves[0].Task != "0_1" || last.Moves[0].From != "B" || last.Moves[0].To != "A" {
		t.Errorf("epoch 3's moves %+v; want 0_1 from B to A", last.Moves)
	}
}

// TestStreamsDescribedMidLife: kproxy starts after the members joined; a
// describe gives their current tasks, from which a later move is told.
func TestStreamsDescribedMidLife(t *testing.T) {
	s := newScript("streams")
	hb := func(c client, req float64, member string, epoch, resp int32, active string) {
		s.ev(c, 88, req, req+0.002).StreamsGroupHeartbeat = &decode.StreamsGroupHeartbeat{MemberID: member, MemberEpoch: epoch,
			AssignedMemberID: member, AssignedEpoch: resp, HeartbeatInterval: time.Second, AcceptableRecoveryLag: -1, Active: streamsTasks(active)}
	}
	hb(cA, 1, "A", 9, 9, "-")
	d := s.ev(client{"admin", "127.0.0.1:50009"}, 89, 2, 2.003)
	d.StreamsGroupDescribe = &decode.StreamsGroupDescribe{Described: true, State: "Stable", GroupEpoch: 9, AssignmentEpoch: 9,
		Members: []decode.StreamsMember{
			{MemberID: "A", MemberEpoch: 9, Assignment: decode.StreamsAssignment{Active: streamsTasks("0_0 0_1"), Standby: streamsTasks(""), Warmup: streamsTasks("")}},
			{MemberID: "B", MemberEpoch: 9, Assignment: decode.StreamsAssignment{Active: streamsTasks("0_2"), Standby: streamsTasks(""), Warmup: streamsTasks("")}},
		}}
	hb(cB, 3, "B", 9, 10, "0_1 0_2")
	hb(cA, 3.5, "A", 9, 10, "0_0")
	_, r, _ := run(t, Config{}, s.events(), 5)
	st := r.Groups[0].Streams
	var got []string
	for _, m := range st.Members {
		got = append(got, m.MemberID+":"+m.Status+":"+strings.Join(m.Tasks.Active, ","))
	}
	if want := "A:active:0_0 B:active:0_1,0_2"; strings.Join(got, " ") != want {
		t.Errorf("members %q; want %q", strings.Join(got, " "), want)
	}
	last := st.Epochs[len(st.Epochs)-1]
	if last.Epoch != 10 || len(last.Moves) != 1 || last.Moves[0].Task != "0_1" || last.Moves[0].From != "A" || last.Moves[0].To != "B" {
		t.Errorf("epoch 10 %+v; want 0_1 moved from A to B", last)
	}
}

// TestStreamsGroupRecreated: the group is deleted and created again
// under the same id while kproxy runs: a member joins at epoch 1 after
// epoch 5; the old history ends and a new one starts.
func TestStreamsGroupRecreated(t *testing.T) {
	s := newScript("streams")
	hb := func(c client, req float64, member string, epoch, resp int32, active string) {
		s.ev(c, 88, req, req+0.002).StreamsGroupHeartbeat = &decode.StreamsGroupHeartbeat{MemberID: member, MemberEpoch: epoch,
			AssignedMemberID: member, AssignedEpoch: resp, HeartbeatInterval: time.Second, AcceptableRecoveryLag: -1, Active: streamsTasks(active)}
	}
	hb(cA, 1, "A", 0, 5, "0_0")
	hb(cA, 2, "A", -1, -1, "-")
	hb(cB, 10, "B", 0, 1, "0_0")
	entries, r, _ := run(t, Config{}, s.events(), 12)
	if n := kinds(entries)[KindRecreated]; n != 1 {
		t.Fatalf("recreated entries %d; want 1\n%s", n, entryLines(entries))
	}
	if len(r.Groups) != 2 || r.Groups[1].Streams == nil || r.Groups[1].Streams.GroupEpoch != 1 || len(r.Groups[1].Streams.Epochs) != 1 {
		t.Errorf("want two histories, the second at epoch 1: %+v", r.Groups)
	}
}
