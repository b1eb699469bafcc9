package diagnose

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// streamsAt is t0 plus s seconds.
func streamsAt(s float64) time.Time {
	return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(s * float64(time.Second)))
}

func streamsStep(at float64, epoch int32, active ...string) timeline.StreamsStepView {
	return timeline.StreamsStepView{At: streamsAt(at), Epoch: epoch, Active: nonNilStrings(active), Standby: []string{}, Warmup: []string{}}
}

// TestStreamsFindings checks the streams-group findings on views of a
// two-member group: fencing, tasks left unheld, warm-ups.
func TestStreamsFindings(t *testing.T) {
	member := func(id string, left time.Time, steps ...timeline.StreamsStepView) timeline.StreamsMemberView {
		return timeline.StreamsMemberView{MemberID: id, ClientID: "app-" + id, ProcessID: "proc-" + id, LeftAt: left, Lane: steps}
	}
	never := time.Time{}
	tests := []struct {
		name string
		st   timeline.StreamsView
		last float64 // the group's lastSeen, seconds
		want []string
	}{
		{
			name: "healthy handover",
			st: timeline.StreamsView{AcceptableRecoveryLag: -1, Members: []timeline.StreamsMemberView{
				member("A", never, streamsStep(1, 1, "0_0", "0_1"), streamsStep(10, 2, "0_0")),
				member("B", never, streamsStep(9, 2), streamsStep(10.5, 2, "0_1")),
			}},
			last: 100,
		},
		{
			name: "fenced",
			st: func() timeline.StreamsView {
				b := member("B", streamsAt(40), streamsStep(9, 2, "0_1"), streamsStep(40, 2))
				b.Fences = []timeline.FenceView{{At: streamsAt(40), Epoch: 2, Error: "FENCED_MEMBER_EPOCH"}}
				return timeline.StreamsView{AcceptableRecoveryLag: -1, Members: []timeline.StreamsMemberView{member("A", never, streamsStep(1, 1, "0_0")), b}}
			}(),
			last: 45,
			want: []string{"streams_member_fenced B critical [0_1]"},
		},
		{
			name: "task unheld 40 s",
			st: timeline.StreamsView{AcceptableRecoveryLag: -1, Members: []timeline.StreamsMemberView{
				member("A", never, streamsStep(1, 1, "0_0", "0_1", "0_10", "0_2"), streamsStep(10, 2, "0_0")),
				member("B", never, streamsStep(9, 2), streamsStep(50, 3, "0_1", "0_10", "0_2")),
			}},
			last: 100,
			want: []string{"streams_tasks_unassigned - critical [0_1 0_2 0_10] 40000 <nil>"},
		},
		{
			name: "task unheld, a status says why",
			st: timeline.StreamsView{AcceptableRecoveryLag: -1, Members: []timeline.StreamsMemberView{
				member("A", never, streamsStep(1, 1, "0_0", "0_1"), streamsStep(10, 2, "0_0")),
			}, Statuses: []timeline.StreamsStatusView{
				{Name: "STALE_TOPOLOGY", RaisedAt: streamsAt(2), ClearedAt: streamsAt(5)},
				{Name: "MISSING_SOURCE_TOPICS", RaisedAt: streamsAt(9), ClearedAt: streamsAt(60)},
			}},
			last: 100,
			want: []string{"streams_tasks_unassigned - critical [0_1] 90000 [MISSING_SOURCE_TOPICS]"},
		},
		{
			name: "task unheld 10 s",
			st: timeline.StreamsView{AcceptableRecoveryLag: -1, Members: []timeline.StreamsMemberView{
				member("A", never, streamsStep(1, 1, "0_0", "0_1"), streamsStep(10, 2, "0_0")),
				member("B", never, streamsStep(9, 2), streamsStep(20, 3, "0_1")),
			}},
			last: 100,
		},
		{
			name: "unheld until the end",
			st: timeline.StreamsView{AcceptableRecoveryLag: -1, Members: []timeline.StreamsMemberView{
				member("A", never, streamsStep(1, 1, "0_0", "0_1")),
				member("B", streamsAt(20), streamsStep(9, 2, "0_2"), streamsStep(20, 2)),
			}},
			last: 80,
			want: []string{"streams_tasks_unassigned - critical [0_2] 60000 <nil>"},
		},
		{
			name: "application stopped",
			st: timeline.StreamsView{AcceptableRecoveryLag: -1, Members: []timeline.StreamsMemberView{
				member("A", streamsAt(20), streamsStep(1, 1, "0_0"), streamsStep(20, 1)),
			}},
			last: 100,
		},
		{
			name: "warm-ups",
			st: timeline.StreamsView{AcceptableRecoveryLag: -1, Members: []timeline.StreamsMemberView{member("A", never, streamsStep(1, 1, "0_0", "0_1"))},
				Warmups: []timeline.StreamsWarmupView{
					{Task: "0_0", MemberID: "A", AssignedAt: streamsAt(1), Lag: 9000},
					{Task: "0_1", MemberID: "A", AssignedAt: streamsAt(1), PromotedAt: streamsAt(500), Lag: -1},
					{Task: "0_2", MemberID: "A", AssignedAt: streamsAt(1), EndedAt: streamsAt(61), Lag: -1},
				}},
			last: 600,
			want: []string{"streams_warmup_stuck A warning 0_0 9000"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.st
			gv := &timeline.GroupView{Group: "app", LastSeen: streamsAt(tt.last), Streams: &st}
			e := New(Config{}, timeline.Config{})
			var got []string
			for _, f := range e.streams(e.group("app"), gv) {
				s := fmt.Sprintf("%s %s %s", f.Kind, memberOrDash(f), f.Severity)
				switch f.Kind {
				case StreamsMemberFenced:
					s += fmt.Sprint(" ", f.Evidence["activeLost"])
				case StreamsTasksUnassigned:
					s += fmt.Sprint(" ", f.Evidence["tasks"], " ", f.Evidence["unassignedMs"], " ", f.Evidence["statuses"])
				case StreamsWarmupStuck:
					s += fmt.Sprint(" ", f.Evidence["task"], " ", f.Evidence["lag"])
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got findings %q; want %q", got, tt.want)
			}
		})
	}
}

func memberOrDash(f Finding) string {
	if len(f.Members) == 0 {
		return "-"
	}
	return f.Members[0].MemberID
}

// TestLiveTellsStreamsFencing: a streams member fenced is told live, at
// the fencing, not only when the input ends.
func TestLiveTellsStreamsFencing(t *testing.T) {
	s := newScript("app")
	hb := func(c client, req float64, member string, epoch, resp int32, code int16, active []decode.StreamsTasks) {
		s.ev(c, 88, req, req+0.002).StreamsGroupHeartbeat = &decode.StreamsGroupHeartbeat{MemberID: member, MemberEpoch: epoch,
			AssignedMemberID: member, AssignedEpoch: resp, ErrorCode: code, HeartbeatInterval: time.Second, AcceptableRecoveryLag: -1, Active: active}
	}
	a, b := client{"app-A", "127.0.0.1:50001"}, client{"app-B", "127.0.0.1:50002"}
	hb(a, 1, "A", 0, 1, 0, []decode.StreamsTasks{{Subtopology: "0", Partitions: []int32{0}}})
	hb(b, 2, "B", 0, 2, 0, []decode.StreamsTasks{{Subtopology: "0", Partitions: []int32{1}}})
	hb(b, 20, "B", 2, 2, 110, nil)
	var told []string
	l := NewLive(timeline.Config{}, timeline.Retention{}, Config{}, func(f Finding) { told = append(told, string(f.Kind)) }, nil)
	feedLive(l, s)
	if !slices.Equal(told, []string{string(StreamsMemberFenced)}) {
		t.Errorf("told %v before the end; want streams_member_fenced", told)
	}
}
