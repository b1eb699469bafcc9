package diagnose

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestLiveWarningBeforeEviction feeds the session-timeout stream with a
// ticker, as serve does, and checks that the warning is raised before the
// member's session runs out: a member silent since 18 s with a 10 s
// session is warned about at 24.67 s, once the clock passes it (the
// ticker's 25 s), not at the next exchange (27 s) nor at the eviction.
func TestLiveWarningBeforeEviction(t *testing.T) {
	var raisedAt time.Time
	var d *Engine
	d = New(Config{OnFinding: func(f Finding) {
		if f.Kind == SessionTimeoutWarning && raisedAt.IsZero() {
			raisedAt = d.now
		}
	}}, timeline.Config{})
	clock := 0.0
	for _, it := range sessionTimeout().ordered() {
		at := later(it.ev.At, it.ev.RespondedAt)
		for ; sec(clock).Before(at); clock += 0.5 {
			d.Advance(sec(clock))
		}
		evs := []decode.Event{*it.ev}
		d.AddEvents(evs)
		d.AddDecoded(&decode.Decoded{Events: evs})
	}
	if want := sec(25); !raisedAt.Equal(want) {
		t.Errorf("warning raised at %s; want %s (the first tick past 24.67 s, before the eviction at 28 s)", raisedAt, want)
	}
}

// TestSilenceCountsAcceptedRequests: a member's silence is counted from
// its last request the coordinator accepted, as the timeline counts it
// for the session timeout: heartbeats that got no answer do not keep it
// alive. A is heard from at 9 s, then sends two heartbeats left
// unanswered (its connection broke); with a 10 s session it is warned
// about at 9 + 6.67 s, not two thirds of a session after the last
// unanswered one.
func TestSilenceCountsAcceptedRequests(t *testing.T) {
	s := newScript("g")
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0}, "B-1": {1}})
	s.hbs(cA, "A-1", 1, 3, 10, 3)
	s.hb(cA, 12, -1, "A-1", 1, 0)
	s.hb(cA, 15, -1, "A-1", 1, 0)
	s.hbs(cB, "B-1", 1, 3, 19, 3)
	_, live := diagnoseScriptTicking(t, Config{}, s, 19, 0.5)
	var got []string
	for _, f := range live {
		if f.Kind == SessionTimeoutWarning {
			got = append(got, f.Members[0].MemberID+" at "+f.At+" last seen "+f.Evidence["lastSeenAt"].(string))
		}
	}
	want := []string{"A-1 at " + stamp(sec(9).Add(fraction(10*time.Second))) + " last seen " + stamp(sec(9))}
	if !slices.Equal(got, want) {
		t.Errorf("session warnings %q; want %q", got, want)
	}
}

// TestNoSilenceWhileJoining: a member of a group being formed whose
// JoinGroup the coordinator holds longer than two thirds of its session
// (the initial rebalance delay and members slow to arrive: 7.45 s here,
// with a 10 s session) is joining, not silent; kafka-python (JoinGroup
// v5) first gets MEMBER_ID_REQUIRED. Neither the wait nor the held
// JoinGroup's answer, whose request is older than the threshold, raises a
// session_timeout_warning.
func TestNoSilenceWhileJoining(t *testing.T) {
	s := newScript("g")
	first := s.jg("", -1, "")
	first.ErrorCode, first.AssignedMemberID = kerr.MemberIDRequired.Code, "A-1"
	s.join(cA, 0, 0.01, first)
	s.join(cA, 0.05, 7.5, s.jg("A-1", 1, "A-1", "A-1"))
	s.sync(cA, 7.6, 7.61, "A-1", 1, parts("t", 0), map[string][]decode.TopicPartitions{"A-1": parts("t", 0)})
	s.hbs(cA, "A-1", 1, 9.6, 20, 3)
	fs, live := diagnoseScriptTicking(t, Config{}, s, 20, 0.5)
	for _, f := range append(fs, live...) {
		if f.Kind == SessionTimeoutWarning {
			t.Errorf("session_timeout_warning of a joining member: %s %v", f.At, f.Evidence)
		}
	}
}
