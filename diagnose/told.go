package diagnose

import (
	"cmp"
	"slices"
	"time"
	"unique"
)

// toldSet is the findings a Live already told, by group: what tells a
// finding recomputed at every publish from one not told yet. It keeps no
// finding's ID: a finding is known by what its ID renders (kind, group,
// member, time), each group's sorted by time, so that a day of findings
// takes 24 bytes each, and at most an eighth more of spare room.
type toldSet map[string][]toldMark

// toldMark is one finding told, within its group: its time as Unix
// seconds and nanoseconds (which name every instant a time.Time can hold,
// as the ID's RFC 3339 stamp does), its kind (its place in Kinds) and the
// member its ID names ("-" for none), interned: 24 bytes.
type toldMark struct {
	sec    int64
	member unique.Handle[string]
	nsec   int32
	kind   uint8
}

// kindIndex is each kind's place in Kinds.
var kindIndex = func() map[Kind]uint8 {
	m := make(map[Kind]uint8, len(Kinds))
	for i, k := range Kinds {
		m[k] = uint8(i)
	}
	return m
}()

// markOf is f's mark.
func markOf(f Finding) toldMark {
	k, ok := kindIndex[f.Kind]
	if !ok {
		panic("diagnose: finding kind " + string(f.Kind) + " missing from Kinds")
	}
	return toldMark{sec: f.at.Unix(), member: unique.Make(f.member), nsec: int32(f.at.Nanosecond()), kind: k}
}

// compareTime orders marks by time.
func compareTime(a, b toldMark) int {
	return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(a.nsec, b.nsec))
}

// add reports whether f was not told yet, and remembers it.
func (s toldSet) add(f Finding) bool {
	marks, m := s[f.Group], markOf(f)
	i, _ := slices.BinarySearchFunc(marks, m, compareTime)
	for j := i; j < len(marks) && compareTime(marks[j], m) == 0; j++ {
		if marks[j] == m {
			return false
		}
	}
	if len(marks) == cap(marks) {
		// A group's marks are kept for a day, most appended in time
		// order: they grow by an eighth, where append would leave up to
		// as many again unused.
		marks = withRoom(marks)
	}
	s[f.Group] = slices.Insert(marks, i, m)
	return true
}

// roomFor is the capacity n marks are given: an eighth more.
func roomFor(n int) int { return n + n/8 + 1 }

// withRoom is marks copied to a slice of roomFor their number.
func withRoom(marks []toldMark) []toldMark {
	return append(make([]toldMark, 0, roomFor(len(marks))), marks...)
}

// forget drops the marks of findings at times before cutoff.
func (s toldSet) forget(cutoff time.Time) {
	c := toldMark{sec: cutoff.Unix(), nsec: int32(cutoff.Nanosecond())}
	for group, marks := range s {
		i, _ := slices.BinarySearchFunc(marks, c, compareTime)
		switch {
		case i == len(marks):
			delete(s, group)
		case i > 0:
			// After a burst, most of the room is spare: it goes.
			if marks = slices.Delete(marks, 0, i); cap(marks) > roomFor(len(marks)) {
				marks = withRoom(marks)
			}
			s[group] = marks
		}
	}
}

// len is how many findings s remembers.
func (s toldSet) len() int {
	n := 0
	for _, marks := range s {
		n += len(marks)
	}
	return n
}
