package decode

import (
	"bytes"
	"cmp"
	"slices"
	"time"
)

// This file holds the small conversions every API decoder shares.

// str is *s, or "" when s is nil.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// millis converts a millisecond count from the wire.
func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// raw copies embedded bytes so that events never alias the exchange's frames.
func raw(b []byte) []byte { return bytes.Clone(b) }

// sortTopics sorts topic-partition lists by topic, and each one's
// partitions, in place: clients list them in map order.
func sortTopics(ts []TopicPartitions) []TopicPartitions {
	for i := range ts {
		slices.Sort(ts[i].Partitions)
	}
	slices.SortFunc(ts, func(a, b TopicPartitions) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return bytes.Compare(a.TopicID[:], b.TopicID[:])
	})
	return ts
}

// sortTopicIDs sorts topic-id partition lists by id, and each one's
// partitions, in place.
func sortTopicIDs(ts []TopicIDPartitions) []TopicIDPartitions {
	for i := range ts {
		slices.Sort(ts[i].Partitions)
	}
	slices.SortFunc(ts, func(a, b TopicIDPartitions) int {
		return bytes.Compare(a.TopicID[:], b.TopicID[:])
	})
	return ts
}

// compareTopic orders topics by name, then by id (for v10 layouts, where
// names are empty).
func compareTopic(aName string, aID TopicID, bName string, bID TopicID) int {
	if c := cmp.Compare(aName, bName); c != 0 {
		return c
	}
	return bytes.Compare(aID[:], bID[:])
}
