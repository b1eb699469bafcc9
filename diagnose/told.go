package diagnose

import (
	"cmp"
	"math"
	"slices"
	"time"
	"unique"
)

// toldSet is the findings a Live already told, by group: what tells a
// finding recomputed at every publish from one not told yet. It keeps no
// finding's ID: a finding is known by what its ID renders (kind, group,
// member, time), each group's sorted by time, so that a day of findings
// takes 16 bytes each, and at most an eighth more of spare room.
type toldSet map[string][]toldMark

// toldMark is one finding told, within its group: its time as Unix
// nanoseconds, and its kind and member together, interned (most findings
// of a group are of a few kinds and members): 16 bytes.
type toldMark struct {
	// at is held to what an int64 of nanoseconds names (the years 1678
	// to 2262); a time beyond it, as the zero time of a finding of
	// unknown time, is in who as well.
	at  int64
	who unique.Handle[markWho]
}

// markWho is a finding's kind (its place in Kinds) and the member its ID
// names ("-" for none); with its time when toldMark.at cannot hold it
// (beyond), so that marks name every instant a time.Time can hold, as
// the ID's RFC 3339 stamp does.
type markWho struct {
	member string
	beyond struct {
		sec  int64
		nsec int32
	}
	kind uint8
}

// kindIndex is each kind's place in Kinds.
var kindIndex = func() map[Kind]uint8 {
	m := make(map[Kind]uint8, len(Kinds))
	for i, k := range Kinds {
		m[k] = uint8(i)
	}
	return m
}()

// nanosOf is t in Unix nanoseconds, held to the range of an int64, and
// whether that is t.
func nanosOf(t time.Time) (int64, bool) {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64, false
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64, false
	}
	return t.UnixNano(), true
}

// markOf is f's mark.
func markOf(f Finding) toldMark {
	k, ok := kindIndex[f.Kind]
	if !ok {
		panic("diagnose: finding kind " + string(f.Kind) + " missing from Kinds")
	}
	w := markWho{member: f.member, kind: k}
	at, exact := nanosOf(f.at)
	if !exact {
		w.beyond.sec, w.beyond.nsec = f.at.Unix(), int32(f.at.Nanosecond())
	}
	return toldMark{at: at, who: unique.Make(w)}
}

// compareTime orders marks by time.
func compareTime(a, b toldMark) int { return cmp.Compare(a.at, b.at) }

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
	at, _ := nanosOf(cutoff)
	c := toldMark{at: at}
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
