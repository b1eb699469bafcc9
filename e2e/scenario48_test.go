//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/internal/headless"
)

// streamsGroup is the part of a report's `streams` object (KIP-1071) that
// scenario 48 reads; docs/timeline-json.md is the contract.
type streamsGroup struct {
	GroupEpoch      int32  `json:"groupEpoch"`
	AssignmentEpoch *int32 `json:"assignmentEpoch"`
	State           string `json:"state"`
	TopologyEpoch   *int32 `json:"topologyEpoch"`
	Subtopologies   []struct {
		ID           string   `json:"id"`
		SourceTopics []string `json:"sourceTopics"`
		Changelogs   []string `json:"stateChangelogTopics"`
	} `json:"subtopologies"`
	Members []streamsMember `json:"members"`
	Epochs  []struct {
		Epoch   int32 `json:"epoch"`
		Trigger struct {
			Kind   string `json:"kind"`
			Member string `json:"member"`
		} `json:"trigger"`
		ReconciledAt *string `json:"reconciledAt"`
		Moves        []struct {
			Task     string `json:"task"`
			Kind     string `json:"kind"`
			From     string `json:"from"`
			To       string `json:"to"`
			Promoted string `json:"promoted"`
		} `json:"moves"`
	} `json:"epochs"`
	Warmups []struct {
		Task       string  `json:"task"`
		MemberID   string  `json:"memberId"`
		PromotedAt *string `json:"promotedAt"`
	} `json:"warmups"`
	UnassignedTasks []string        `json:"unassignedTasks"`
	Statuses        []streamsStatus `json:"statuses"`
}

type streamsStatus struct {
	Name      string  `json:"name"`
	Detail    string  `json:"detail"`
	ClearedAt *string `json:"clearedAt"`
}

type streamsMember struct {
	MemberID     string       `json:"memberId"`
	ProcessID    string       `json:"processId"`
	UserEndpoint string       `json:"userEndpoint"`
	ClientID     string       `json:"clientId"`
	Status       string       `json:"status"`
	Tasks        streamsTasks `json:"tasks"`
	Fences       []struct {
		Error string `json:"error"`
	} `json:"fences"`
	Target *streamsTasks `json:"target"`
	Lane   []struct {
		Epoch int32 `json:"epoch"`
		streamsTasks
	} `json:"lane"`
}

type streamsTasks struct {
	Active  []string `json:"active"`
	Standby []string `json:"standby"`
	Warmup  []string `json:"warmup"`
}

// streamsGroupJSON is a group of a report, as far as scenario 48 reads it.
type streamsGroupJSON struct {
	Group         string        `json:"group"`
	GroupProtocol string        `json:"groupProtocol"`
	Streams       *streamsGroup `json:"streams"`
}

// streams is g's streams object, failing when g is no streams group.
func (g streamsGroupJSON) streams(t *testing.T) *streamsGroup {
	t.Helper()
	if g.GroupProtocol != "streams" || g.Streams == nil {
		t.Fatalf("group %s: groupProtocol %q, streams %v; want a streams group", g.Group, g.GroupProtocol, g.Streams)
	}
	return g.Streams
}

// streamsOf decodes the streams object of group in a report's raw JSON.
func streamsOf(t *testing.T, raw []byte, group string) *streamsGroup {
	t.Helper()
	var r struct {
		Groups []streamsGroupJSON `json:"groups"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("report: %v", err)
	}
	for _, g := range r.Groups {
		if g.Group == group {
			return g.streams(t)
		}
	}
	t.Fatalf("group %s not in the report", group)
	return nil
}

// member is the member whose client id is clientID (the stream thread's
// consumer's, as the application printed it).
func (s *streamsGroup) member(t *testing.T, clientID string) *streamsMember {
	t.Helper()
	var ids []string
	for i := range s.Members {
		if s.Members[i].ClientID == clientID {
			return &s.Members[i]
		}
		ids = append(ids, s.Members[i].ClientID)
	}
	t.Fatalf("no streams member with client id %s (members' client ids %v)", clientID, ids)
	return nil
}

// TestScenario48: a Kafka Streams 4.4 application (StreamsApp: a stateless
// branch and a count, one subtopology, three tasks) run with
// group.protocol=streams (KIP-1071) through kproxy, the broker holding one
// standby replica per task (broker.sh: group.streams.num.standby.replicas).
// Instance A starts alone and gets the three tasks; instance B joins and
// takes some; then B is stopped and A takes them back. Each prints its
// tasks as they change. The story kproxy tells, live (/api/groups/GROUP)
// and replayed (JSON, text, HTML), must match what they printed: A's three
// tasks, the tasks B got moving from A to B in an epoch B's join began,
// and back from B to A in the epoch its leave began, each member's lane
// holding the task sets the applications printed once settled, with
// their process ids and endpoints.
func TestScenario48(t *testing.T) {
	if !kafkaAtLeast(4, 2) {
		t.Fatalf("streams groups (KIP-1071) are generally available from Kafka 4.2; the broker is %s", kafkaVersion)
	}
	const app = "streams_app_48"
	k := startKproxyWith(t, true, brokerAddr, "--admin", proxyAdmin)
	bs := bootstrap(k)
	sa := newStreamsApp(t, app, "streams48", k, "--group-protocol", "streams")
	a := sa.start("streams-A", "127.0.0.1:7481")
	gotA := allTasks(a, 0, 120*time.Second, "A running with the three tasks")
	b := sa.start("streams-B", "127.0.0.1:7482")
	settle := func(what string, fromA, fromB int) (event, event) {
		t.Helper()
		return settleTasks(t, what, a, b, fromA, fromB, 150*time.Second)
	}
	lastA, lastB := settle("B joined", 0, 0)
	// The live page's data: the group's report from the admin API.
	var lg streamsGroupJSON
	if err := json.Unmarshal(liveGroup(t, app), &lg); err != nil {
		t.Fatalf("admin API: %v", err)
	}
	live := lg.streams(t)
	for _, c := range []struct {
		clientID string
		want     event
	}{{lastA.ClientID, lastA}, {lastB.ClientID, lastB}} {
		m := live.member(t, c.clientID)
		if !slices.Equal(m.Tasks.Active, c.want.Active) || !slices.Equal(m.Tasks.Standby, nonNil(c.want.Standby)) {
			t.Errorf("live: %s holds active %v standby %v; the application printed active %v standby %v",
				c.clientID, m.Tasks.Active, m.Tasks.Standby, c.want.Active, c.want.Standby)
		}
	}
	// The live page draws a lane per member with the tasks it printed.
	br := headless.Start(t, headless.Options{})
	br.Run(t, 30*time.Second, chromedp.Navigate("http://"+proxyAdmin+"/groups/"+app))
	br.WaitJS(t, "the streams lanes", `document.querySelectorAll('#streams-members tr[data-member]').length == 2`, 20*time.Second)
	for _, c := range []event{lastA, lastB} {
		m := live.member(t, c.ClientID)
		segs := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#chart g.owned-seg')).map(g => g.getAttribute('data-partitions'))`)
		want := "active[" + strings.Join(c.Active, " ") + "]"
		if !slices.Contains(segs, want) {
			t.Errorf("live page: no lane segment %s for %s among %q", want, m.MemberID, segs)
		}
		row := headless.Eval[string](t, br, `document.querySelector('#streams-members tr[data-member="`+m.MemberID+`"]').innerText`)
		if !strings.Contains(row, strings.Join(c.Active, " ")) || !strings.Contains(row, m.ProcessID) {
			t.Errorf("live page: %s's row %q lacks its tasks %v or process %s", m.MemberID, row, c.Active, m.ProcessID)
		}
	}
	br.Screenshot(t, filepath.Join(runDir(t), "live-page.png"))
	// The metrics count the epochs reconciled, and the members.
	metrics := httpGetBody(t, "http://"+proxyAdmin+"/metrics")
	for _, want := range []string{`kproxy_group_rebalances_total{group="` + app + `",trigger="member_joined"}`, `kproxy_group_members{group="` + app + `"} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics: no %s", want)
		}
	}
	// An admin client describes the group through kproxy, as
	// kafka-streams-groups.sh --describe does: the report must carry the
	// state, assignment epoch and targets the broker answered.
	desc := describeStreamsGroup(t, bs, app)
	// B freezes (SIGSTOP) past the group's 10 s session timeout: the
	// coordinator gives its tasks to A. Resumed, B is fenced and joins
	// again.
	markA := a.mark()
	b.signal(syscall.SIGSTOP)
	frozenA := allTasks(a, markA, 60*time.Second, "A with the three tasks while B is frozen")
	markA = a.mark()
	b.signal(syscall.SIGCONT)
	// B's printer may see no change: fenced, it gets its tasks back
	// within a poll of 100 ms. A prints the tasks it gives back.
	lastA2, lastB2 := settle("B fenced and back", markA, 0)
	markA = a.mark()
	b.stop(60 * time.Second)
	backA := allTasks(a, markA, 90*time.Second, "A with the three tasks again")
	time.Sleep(2 * time.Second)
	a.stop(60 * time.Second)
	r := k.finish()
	if r == nil {
		return
	}
	raw, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	st := streamsOf(t, raw, app)
	ma, mb := st.member(t, gotA.ClientID), st.member(t, lastB.ClientID)
	if ma.ProcessID == "" || mb.ProcessID == "" || ma.ProcessID == mb.ProcessID {
		t.Errorf("process ids %q and %q; want two distinct ones", ma.ProcessID, mb.ProcessID)
	}
	if ma.UserEndpoint != "127.0.0.1:7481" || mb.UserEndpoint != "127.0.0.1:7482" {
		t.Errorf("endpoints %q and %q; want the applications' application.server", ma.UserEndpoint, mb.UserEndpoint)
	}
	if st.AssignmentEpoch == nil || *st.AssignmentEpoch != desc.AssignmentEpoch || st.State != desc.State {
		t.Errorf("assignment epoch %v, state %q; the describe answered %d, %q", st.AssignmentEpoch, st.State, desc.AssignmentEpoch, desc.State)
	}
	for _, dm := range desc.Members {
		var m *streamsMember
		for i := range st.Members {
			if st.Members[i].MemberID == dm.MemberID {
				m = &st.Members[i]
			}
		}
		want := streamsTasks{Active: taskIDs(dm.TargetAssignment.ActiveTasks), Standby: taskIDs(dm.TargetAssignment.StandbyTasks),
			Warmup: taskIDs(dm.TargetAssignment.WarmupTasks)}
		if m == nil || m.Target == nil || !slices.Equal(m.Target.Active, want.Active) || !slices.Equal(m.Target.Standby, want.Standby) ||
			!slices.Equal(m.Target.Warmup, want.Warmup) {
			t.Errorf("described member %s: the report's target %+v; the describe answered %+v", dm.MemberID, m, want)
		}
	}
	if mb.Status != "left" {
		t.Errorf("B's status %q; want left", mb.Status)
	}
	if st.TopologyEpoch == nil || len(st.Subtopologies) != 1 || !slices.Equal(st.Subtopologies[0].SourceTopics, []string{sa.input}) {
		t.Errorf("topology epoch %v, subtopologies %+v; want one reading %s", st.TopologyEpoch, st.Subtopologies, sa.input)
	}
	// Each lane holds the task sets the application printed: A's three
	// tasks, then the settled split, then the three again; B's share.
	hasStep := func(m *streamsMember, e event) bool {
		for _, s := range m.Lane {
			if slices.Equal(s.Active, e.Active) && slices.Equal(s.Standby, nonNil(e.Standby)) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		m    *streamsMember
		e    event
		what string
	}{{ma, gotA, "A alone"}, {ma, lastA, "A settled"}, {mb, lastB, "B settled"}, {ma, frozenA, "A while B froze"},
		{ma, lastA2, "A settled again"}, {mb, lastB2, "B settled again"}, {ma, backA, "A after B left"}} {
		if !hasStep(c.m, c.e) {
			t.Errorf("%s: the lane of %s has no step with active %v standby %v:\n%+v", c.what, c.m.ClientID, c.e.Active, c.e.Standby, c.m.Lane)
		}
	}
	// The moves: B's tasks from A to B in an epoch from B's join on,
	// and back from B to A from B's leave on.
	joinEpoch, leaveEpoch, freezeEpoch := int32(-1), int32(-1), int32(-1)
	moved := map[string][]int32{} // "task from>to" -> epochs
	for _, e := range st.Epochs {
		if e.Trigger.Member == mb.MemberID && e.Trigger.Kind == "member_joined" && joinEpoch < 0 {
			joinEpoch = e.Epoch
			if e.ReconciledAt == nil {
				t.Errorf("epoch %d (B joined) never reconciled, though A and B settled on it", e.Epoch)
			}
		}
		if e.Trigger.Member == mb.MemberID && e.Trigger.Kind == "session_timeout" && freezeEpoch < 0 {
			freezeEpoch = e.Epoch
		}
		if e.Trigger.Member == mb.MemberID && e.Trigger.Kind == "member_left" {
			leaveEpoch = e.Epoch
		}
		for _, mv := range e.Moves {
			k := mv.Task + " " + mv.From + ">" + mv.To
			if mv.Kind != "active" {
				k = mv.Task + " " + mv.Kind + ">" + mv.To
			}
			moved[k] = append(moved[k], e.Epoch)
		}
	}
	if joinEpoch < 0 || freezeEpoch < 0 || leaveEpoch < 0 {
		t.Fatalf("no epoch triggered by B's join (%d), its session timing out while frozen (%d) or its leave (%d):\n%s", joinEpoch, freezeEpoch, leaveEpoch, raw)
	}
	movedIn := func(task, from, to string, lo, hi int32) bool {
		return slices.ContainsFunc(moved[task+" "+from+">"+to], func(e int32) bool { return e >= lo && e <= hi })
	}
	// B's first tasks: A to B from its join, back to A while it was
	// frozen (before it left); its second: A to B again, back from its
	// leave.
	for _, task := range lastB.Active {
		if !movedIn(task, ma.MemberID, mb.MemberID, joinEpoch, freezeEpoch-1) || !movedIn(task, mb.MemberID, ma.MemberID, freezeEpoch, freezeEpoch) {
			t.Errorf("task %s: no move from A to B from epoch %d, and back at epoch %d, B's session timeout (moves %v)", task, joinEpoch, freezeEpoch, moved)
		}
	}
	for _, task := range lastB2.Active {
		if !movedIn(task, ma.MemberID, mb.MemberID, freezeEpoch+1, leaveEpoch) || !movedIn(task, mb.MemberID, ma.MemberID, leaveEpoch, 1<<30) {
			t.Errorf("task %s: no move from A to B after B came back, and back from epoch %d (moves %v)", task, leaveEpoch, moved)
		}
	}
	// The standby tasks each printed once B had joined came with B's
	// join epoch.
	for _, c := range []struct {
		m    *streamsMember
		e    event
		what string
	}{{ma, lastA, "A"}, {mb, lastB, "B"}} {
		for _, task := range c.e.Standby {
			if !slices.Contains(moved[task+" standby>"+c.m.MemberID], joinEpoch) {
				t.Errorf("standby %s of %s: not given at epoch %d, B's join (moves %v)", task, c.what, joinEpoch, moved)
			}
		}
	}
	if len(mb.Fences) == 0 {
		t.Errorf("B's fencing is not in the report")
	}
	// The changelog topic was deleted before the run: the coordinator
	// said it was missing (MISSING_INTERNAL_TOPICS), created it, and
	// cleared the status.
	changelog := app + "-counts-store-changelog"
	if !slices.ContainsFunc(st.Statuses, func(x streamsStatus) bool {
		return x.Name == "MISSING_INTERNAL_TOPICS" && strings.Contains(x.Detail, changelog) && x.ClearedAt != nil
	}) {
		t.Errorf("statuses %+v; want MISSING_INTERNAL_TOPICS naming %s, cleared", st.Statuses, changelog)
	}
	if len(st.UnassignedTasks) > 0 {
		t.Errorf("unassigned tasks %v; want none (A took everything back, then the application stopped)", st.UnassignedTasks)
	}
	// The text timeline and the HTML report tell the same moves.
	text := replayFormat(t, k, "text")
	told := func(to, task, from string) bool {
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, " "+to+" at epoch ") && strings.Contains(line, "+"+task+" from "+from) {
				return true
			}
		}
		return false
	}
	for _, task := range lastB.Active {
		if !told(mb.MemberID, task, ma.MemberID) || !told(ma.MemberID, task, mb.MemberID) {
			t.Errorf("text timeline: %s's move from A to B and back is not told", task)
		}
	}
	if html := replayFormat(t, k, "html"); !strings.Contains(html, `"streams":{`) || !strings.Contains(html, mb.MemberID) {
		t.Errorf("replay --format html: the streams group is not in the page's data")
	}
	// The diagnosis: B fenced, losing the tasks it held when it froze;
	// nothing else of the streams group.
	var kinds []string
	fenced := false
	for _, f := range k.diagnose(app) {
		kinds = append(kinds, f.Kind)
		if f.Kind == "streams_member_fenced" && len(f.Members) == 1 && f.Members[0].MemberID == mb.MemberID {
			fenced = fmt.Sprint(f.Evidence["activeLost"]) == fmt.Sprint(lastB.Active)
		}
	}
	if !fenced || slices.Contains(kinds, "streams_tasks_unassigned") || slices.Contains(kinds, "streams_warmup_stuck") {
		t.Errorf("diagnosis kinds %v; want streams_member_fenced of B losing %v, no unassigned tasks or stuck warm-ups", kinds, lastB.Active)
	}
	t.Logf("findings %v", kinds)
	t.Logf("B joined at epoch %d, left at epoch %d; B took %v from A; warm-ups %d; final epoch %d", joinEpoch, leaveEpoch, lastB.Active, len(st.Warmups), st.GroupEpoch)
}

// describeStreamsGroup sends a StreamsGroupDescribe for group through bs
// (kproxy) and returns the broker's answer.
func describeStreamsGroup(t *testing.T, bs, group string) *kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("StreamsGroupDescribe %s: %v %+v", group, err, resp)
	}
	g := resp.Groups[0]
	t.Logf("described: state %s, group epoch %d, assignment epoch %d, %d members", g.State, g.Epoch, g.AssignmentEpoch, len(g.Members))
	return &g
}

// taskIDs is ts as sorted task ids, "0_1".
func taskIDs(ts []kmsg.TaskIDs) []string {
	out := []string{}
	for _, x := range ts {
		for _, p := range x.Partitions {
			out = append(out, fmt.Sprintf("%s_%d", x.SubtopologyID, p))
		}
	}
	slices.Sort(out)
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// httpGetBody is the body of a GET of url, failing on an error status.
func httpGetBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

// liveGroup is the live kproxy's report of group from its admin API, the
// data the web page draws.
func liveGroup(t *testing.T, group string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + proxyAdmin + "/api/groups/" + group)
	if err != nil {
		t.Fatalf("admin API: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("admin API /api/groups/%s: %s %v\n%s", group, resp.Status, err, b)
	}
	return b
}

// replayFormat is `kproxy replay JOURNAL --format FORMAT`'s output, kept in
// the run directory.
func replayFormat(t *testing.T, k *kproxy, format string) string {
	t.Helper()
	out, err := exec.Command(kproxyBin(), "replay", k.journal, "--format", format).Output()
	if err != nil {
		t.Fatalf("kproxy replay --format %s: %v", format, err)
	}
	if err := os.WriteFile(filepath.Join(runDir(t), "timeline."+format), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return string(out)
}
