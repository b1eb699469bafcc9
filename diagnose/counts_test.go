package diagnose

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// checkCounts checks that Live's published counts and findings are, for
// every group it counts or has findings of, what the engine finds of the
// group now (freshFindings): nothing changed without a publish saying so.
// It returns the counts.
func checkCounts(t *testing.T, l *Live, groups []string, when string) map[string]FindingCount {
	t.Helper()
	counts := l.Counts()
	all := slices.Sorted(maps.Keys(counts))
	for _, g := range groups {
		if !slices.Contains(all, g) {
			all = append(all, g)
		}
	}
	for _, g := range all {
		fs := freshFindings(l, g)
		want := CountFindings(fs)[g]
		if got := counts[g]; got != want {
			var kinds []string
			for _, f := range fs {
				kinds = append(kinds, string(f.Kind)+"@"+f.At)
			}
			t.Errorf("%s: group %s counted %+v; the engine finds %+v (%d findings: %v)", when, g, got, want, len(fs), kinds)
		}
		if got := l.GroupFindings(g); !slices.EqualFunc(got, fs, func(a, b Finding) bool { return a.ID == b.ID }) {
			t.Errorf("%s: group %s published %d findings; the engine finds %d", when, g, len(got), len(fs))
		}
	}
	return counts
}

// freshFindings is what the engine finds of group now, from the
// timeline as it is now.
func freshFindings(l *Live, group string) []Finding {
	return l.d.findingsOf(map[string]bool{group: true}, true)
}

// TestLiveCounts runs scenarios through Live as serve does, with the
// timeline's retention and the diagnosis' Forget of serve (or with the
// timeline alone forgetting), and checks that Counts agrees with
// GroupFindings for every group: after the stream; once the silent
// members are warned of; once the engine has forgotten the silent
// connections (before Forget: counts need not be recounted then, and are
// not); once event time has gone past the age of its warnings
// while the group still shows (the engine prunes them without an entry or
// event saying so); and once the
// group has been quiet for longer than that (the timeline forgets it,
// and with Forget the diagnosis too).
func TestLiveCounts(t *testing.T) {
	const age = 30 * time.Minute // longer than the engine keeps silent connections
	for _, c := range liveScripts {
		for _, forget := range []time.Duration{age, 0} {
			t.Run(c.name+"/forget="+forget.String(), func(t *testing.T) {
				l := NewLive(timeline.Config{}, timeline.Retention{MaxAge: age}, Config{Forget: forget}, nil, nil)
				s := c.script()
				feedLive(l, s)
				l.Close(sec(c.closeAt))
				groups := []string{s.group}
				after := checkCounts(t, l, groups, "after the stream")
				if after[s.group].N == 0 {
					t.Fatalf("no finding counted for %s: %+v", s.group, after)
				}

				// A few seconds on, to the diagnosis only: the members
				// silent since the end are warned of, without an entry.
				soon := sec(c.closeAt + 8)
				l.AddDecoded(&decode.Decoded{Events: []decode.Event{{At: soon}}})
				checkCounts(t, l, groups, "a few seconds on")

				// Twelve minutes on, to the diagnosis only: the engine has
				// forgotten the group's silent connections (and counted
				// nothing again: no finding is older than Forget yet).
				l.AddDecoded(&decode.Decoded{Events: []decode.Event{{At: sec(c.closeAt).Add(12 * time.Minute)}}})
				checkCounts(t, l, groups, "once the connections were forgotten")

				// A client of the group still heartbeats (one the
				// diagnosis knows nothing of, so that it changes no
				// finding), to the diagnosis only (the timeline's
				// snapshot stays as it was): the group is kept, its
				// warnings older than Forget go, and nothing but that
				// age says its count changed.
				later := sec(c.closeAt).Add(age + 2*time.Minute)
				hb := decode.Event{At: later, RespondedAt: later, ClientID: "z", ClientAddr: "10.0.0.99:40000", APIKey: 12, APIVersion: versions[12],
					Group: s.group, BrokerID: 1, Heartbeat: &decode.Heartbeat{MemberID: "Z-1", Generation: 1}}
				l.AddDecoded(&decode.Decoded{Events: []decode.Event{hb}})
				checkCounts(t, l, groups, "after the warnings aged")

				// The group is quiet for longer than the retention: the
				// timeline forgets it at its next publish.
				quiet := later.Add(age + 2*time.Minute)
				evs := []decode.Event{{At: quiet}} // group-less: only the clocks move
				l.AddEvents(evs)
				l.AddDecoded(&decode.Decoded{Events: evs})
				l.Timeline().Publish()
				if l.Timeline().Snapshot().Has(s.group) {
					t.Fatalf("the timeline still holds %s %s after it was last seen", s.group, quiet.Sub(later))
				}
				evs = []decode.Event{{At: quiet.Add(time.Second)}}
				l.AddEvents(evs)
				l.AddDecoded(&decode.Decoded{Events: evs})
				gone := checkCounts(t, l, groups, "after the group was forgotten")
				if forget > 0 && len(gone) != 0 {
					t.Errorf("counts %+v once the diagnosis forgot the group; want none", gone)
				}
			})
		}
	}
}
