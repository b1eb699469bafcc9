package timeline

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// seedReport is the seed scenario's report, the golden file.
func seedReport(t testing.TB) *Report {
	t.Helper()
	b, err := os.ReadFile("testdata/seed.json")
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// streamsGolden is the streams script's group, from its golden file.
func streamsGolden(t testing.TB) GroupReport {
	t.Helper()
	b, err := os.ReadFile("testdata/streams.json")
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Groups[0]
}

func TestSummarize(t *testing.T) {
	seed := seedReport(t).Groups[0]
	streams := streamsGolden(t)
	undescribed := streams
	st := *streams.Streams
	st.State = ""
	undescribed.Streams = &st
	pending := seed
	pending.PendingRebalance = &PendingReport{Generation: 3, StartedAt: seed.Generations[1].StableAt,
		Trigger: TriggerReport{Kind: "member_left"}}
	classic2 := map[string]int{"classic": 2}
	// upgradeScript until A-1 left: B-1 is still a classic member.
	var evs []decode.Event
	for _, ev := range upgradeScript().events() {
		if ev.At.Before(sec(25)) {
			evs = append(evs, ev)
		}
	}
	_, r, _ := run(t, Config{}, evs, -1)
	upgrading := r.Groups[0]
	tests := []struct {
		name string
		g    GroupReport
		want GroupSummary
	}{
		{"the seed", seed, GroupSummary{Group: "test_group_1", GroupProtocol: "classic", MemberProtocols: classic2, Assignor: "range", State: "stable",
			Generation: 2, Members: 2, LastRebalance: seed.Generations[1].StartedAt, LastTrigger: "member_joined",
			RebalancesLastHour: 2, LastSeen: seed.LastSeen}},
		{"a rebalance under way", pending, GroupSummary{Group: "test_group_1", GroupProtocol: "classic", MemberProtocols: classic2, Assignor: "range",
			State: "rebalancing", Generation: 2, Members: 2, LastRebalance: seed.Generations[1].StableAt, LastTrigger: "member_left",
			RebalancesLastHour: 2, LastSeen: seed.LastSeen}},
		{"nothing seen yet", GroupReport{Group: "g"}, GroupSummary{Group: "g", MemberProtocols: map[string]int{}, State: "unknown"}},
		{"an upgrade under way", upgrading, GroupSummary{Group: "up", GroupProtocol: "consumer", MemberProtocols: map[string]int{"classic": 1, "consumer": 1},
			Migration: "upgrade", State: "syncing", Generation: 3, Members: 2, Assignor: "range", LastRebalance: upgrading.Generations[2].StartedAt,
			LastTrigger: "member_left", RebalancesLastHour: 3, LastSeen: upgrading.LastSeen}},
		// A's epoch 7 is the group's: stable as described, and stable
		// from the member epochs without the describe.
		{"a streams group", streams, GroupSummary{Group: "streams", GroupProtocol: "streams", MemberProtocols: map[string]int{}, Assignor: "sticky", State: "stable",
			Generation: 7, Members: 1, LastRebalance: &streams.Streams.Epochs[6].At, LastTrigger: "member_left",
			RebalancesLastHour: 7, LastSeen: streams.LastSeen}},
		{"a streams group never described", undescribed, GroupSummary{Group: "streams", GroupProtocol: "streams", MemberProtocols: map[string]int{}, Assignor: "sticky", State: "stable",
			Generation: 7, Members: 1, LastRebalance: &streams.Streams.Epochs[6].At, LastTrigger: "member_left",
			RebalancesLastHour: 7, LastSeen: streams.LastSeen}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(&tt.g)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tt.want)
			if string(gb) != string(wb) {
				t.Errorf("got %s; want %s", gb, wb)
			}
		})
	}
}

// TestSnapshotSummariesAndGroup checks that a snapshot's summaries are the
// groups' (kept, not decoded) and that GroupJSON is the one group asked,
// as encoded.
func TestSnapshotSummariesAndGroup(t *testing.T) {
	r := seedReport(t)
	other := GroupReport{Group: "a-quiet-group", LastSeen: r.Groups[0].FirstSeen}
	r.Groups = append([]GroupReport{other}, r.Groups...)
	horizon := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := SnapshotOf(r, horizon)
	if s.Len() != 2 || !s.Horizon.Equal(horizon) {
		t.Fatalf("%d groups, horizon %v; want 2 and %v", s.Len(), s.Horizon, horizon)
	}
	got := s.Summaries()
	want := []GroupSummary{Summarize(&r.Groups[0]), Summarize(&r.Groups[1])}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summaries %+v; want %+v", got, want)
	}
	gb, ok, err := s.GroupJSON(context.Background(), "test_group_1")
	if err != nil || !ok {
		t.Fatal("test_group_1 is missing")
	}
	wb, _ := json.Marshal(r.Groups[1])
	if string(gb) != string(wb) {
		t.Errorf("GroupJSON(test_group_1) = %s; want %s", gb, wb)
	}
	if _, ok, _ := s.GroupJSON(context.Background(), "nope"); ok {
		t.Error("GroupJSON(nope) found a group")
	}
}
