package timeline

import (
	"github.com/kproxy-dev/kproxy/decode"

	"strings"
	"testing"
)

// TestBlind: B's heartbeats stop at 9 s while A's go on. Told nothing, the
// engine infers B's session expired; told that B's proxy went silent at
// 9 s (a fleet), it infers nothing and notes the gap; the next stable
// generation ends the blindness, so a later silence is inferred again.
func TestBlind(t *testing.T) {
	tests := []struct {
		name    string
		blindAt float64 // < 0: not blind
		expired bool
		note    bool
	}{
		{"not blind: expiry inferred", -1, true, false},
		{"blind: nothing inferred, the gap noted", 9.5, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := twoMembers("g")
			s.hbs(cA, "A-1", 1, 12, 33) // B's last heartbeat was at 9 s: it would expire at 19 s
			var entries []Entry
			e := New(Config{OnEntry: func(en Entry) { entries = append(entries, en) }})
			for _, ev := range s.events() {
				if tt.blindAt >= 0 && !ev.At.Before(sec(tt.blindAt)) && !e.byID["g"].blind && len(e.byID["g"].notes) == 0 {
					e.Blind("g", "zone-b", sec(tt.blindAt))
				}
				e.Add(ev)
			}
			e.Blind("unknown-group", "zone-b", sec(30)) // left alone
			e.Close(sec(33))
			if got := kinds(entries)[KindSessionExpired] > 0; got != tt.expired {
				t.Errorf("session expiry inferred %v; want %v\n%s", got, tt.expired, entryLines(entries))
			}
			g := e.Report().Groups
			if len(g) != 1 {
				t.Fatalf("%d groups; want g only", len(g))
			}
			var notes []string
			for _, u := range g[0].Unknown {
				notes = append(notes, u.What+": "+u.Why)
			}
			got := strings.Join(notes, "\n")
			if has := strings.Contains(got, "silent instance zone-b: kproxy instance zone-b went silent after 2024-03-07T14:02:09.5Z"); has != tt.note {
				t.Errorf("group notes %q; want the silent instance noted %v", got, tt.note)
			}
		})
	}
}

// TestBlindEndsWithStableGeneration: once a generation is stable again,
// a member's silence is inferred to be an expiry again.
func TestBlindEndsWithStableGeneration(t *testing.T) {
	s := twoMembers("g")
	e := New(Config{})
	evs := s.events()
	e.Blind("g", "zone-b", sec(0)) // unknown yet: left alone
	if e.byID["g"] != nil {
		t.Fatal("Blind created the group")
	}
	e.Add(evs[0])
	e.Blind("g", "zone-b", sec(0.001))
	if !e.byID["g"].blind {
		t.Fatal("not blind after Blind")
	}
	for _, ev := range evs[1:] {
		e.Add(ev)
	}
	if e.byID["g"].blind {
		t.Error("still blind once generation 1 is stable")
	}
}

// TestBlindDeparture: B's heartbeats stop at 9 s and generation 2 forms
// at 33 s with A alone. Told nothing, the engine infers B's session
// expired at 19 s; told that B's proxy went silent at 9.5 s, it must not
// infer it when classifying B's departure or the rebalance's cause: the
// coordinator dropped B when the join phase ended, for a cause not seen.
func TestBlindDeparture(t *testing.T) {
	tests := []struct {
		name        string
		blind       bool
		trigger     string
		departedHow string
	}{
		{"not blind: the expiry is inferred", false, TriggerSessionTimeout, DepartSessionTimeout},
		{"blind: no expiry invented", true, TriggerUnknown, DepartDropped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := twoMembers("g")
			s.hbs(cA, "A-1", 1, 12, 33) // B's last heartbeat was at 9 s: it would expire at 19 s
			s.hb(cA, 33, 33.001, "A-1", 1, errRebalanceInProgress)
			s.join(cA, 33.1, 33.102, jg("A-1", 2, "A-1", "A-1"))
			all := tp("round_topic", 0, 1, 2)
			s.sync(cA, 33.103, 33.104, "A-1", 2, all, map[string][]decode.TopicPartitions{"A-1": all})
			var entries []Entry
			e := New(Config{OnEntry: func(en Entry) { entries = append(entries, en) }})
			for _, ev := range s.events() {
				if tt.blind && !ev.At.Before(sec(9.5)) && len(e.byID["g"].notes) == 0 {
					e.Blind("g", "zone-b", sec(9.5))
				}
				e.Add(ev)
			}
			e.Close(sec(34))
			g2 := genOf(t, e.Report(), "g", 2)
			if g2.Trigger.Kind != tt.trigger {
				t.Errorf("trigger %+v; want %s", g2.Trigger, tt.trigger)
			}
			if len(g2.Departed) != 1 || g2.Departed[0].MemberID != "B-1" || g2.Departed[0].How != tt.departedHow {
				t.Errorf("departed %+v; want B-1 %s", g2.Departed, tt.departedHow)
			}
			if got := kinds(entries)[KindSessionExpired] > 0; got != !tt.blind {
				t.Errorf("session expiry entry %v; want %v\n%s", got, !tt.blind, entryLines(entries))
			}
		})
	}
}
