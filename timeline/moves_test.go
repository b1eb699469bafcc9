package timeline

import "testing"

// TestMovesHeld checks that what a member was added, revoked and kept is
// what computeDiff found: derived from what it owned before and its
// assignment, and held as it was when the assignment changes after, until
// computeDiff records what it owned before again.
func TestMovesHeld(t *testing.T) {
	set := func(parts ...int32) partitions { return partitions{{topic: "t", parts: parts}} }
	type want struct{ added, revoked, kept string }
	for _, tc := range []struct {
		name string
		run  func(m *member)
		want want
	}{
		{"not yet diffed", func(m *member) { m.setPlanned(set(1, 2)) }, want{"", "", ""}},
		{"derived", func(m *member) {
			m.setPlanned(set(1, 2))
			m.setBefore(set(2, 3))
		}, want{"t[1]", "t[3]", "t[2]"}},
		{"assignment equal to the plan", func(m *member) {
			m.setPlanned(set(1, 2))
			m.setBefore(set(2, 3))
			m.setAssignment(set(1, 2))
		}, want{"t[1]", "t[3]", "t[2]"}},
		{"assignment changed after the diff", func(m *member) {
			m.setPlanned(set(1, 2))
			m.setBefore(set(2, 3))
			m.setAssignment(set(3, 4))
		}, want{"t[1]", "t[3]", "t[2]"}},
		{"plan seen after the diff", func(m *member) {
			m.setAssignment(set(1, 2))
			m.setBefore(set(2, 3))
			m.setPlanned(set(5))
		}, want{"t[1]", "t[3]", "t[2]"}},
		{"diffed again", func(m *member) {
			m.setPlanned(set(1, 2))
			m.setBefore(set(2, 3))
			m.setAssignment(set(3, 4))
			m.setBefore(set(2, 3))
		}, want{"t[4]", "t[2]", "t[3]"}},
		{"assignment unknown when diffed", func(m *member) {
			m.setBefore(nil)
			m.setAssignment(set(1))
		}, want{"", "", ""}},
		{"KIP-848 steps gathered", func(m *member) {
			m.setAssignment(set(1, 2))
			mv := m.hold()
			mv.added = union([]partitions{mv.added, set(2)})
			mv = m.hold()
			mv.added = union([]partitions{mv.added, set(1)})
			mv.revoked = union([]partitions{mv.revoked, set(3)})
		}, want{"t[1 2]", "t[3]", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &member{id: "m", who: noIdentity}
			tc.run(m)
			added, revoked, kept := m.moves()
			if got := (want{str(added), str(revoked), str(kept)}); got != tc.want {
				t.Errorf("moves %+v, want %+v", got, tc.want)
			}
			if r := m.revoked(); str(r) != tc.want.revoked {
				t.Errorf("revoked %q, want %q", str(r), tc.want.revoked)
			}
		})
	}
}

func str(p partitions) string {
	if p == nil {
		return ""
	}
	return p.String()
}
