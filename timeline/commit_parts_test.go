package timeline

import (
	"reflect"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestCommitPartsMatchMaps checks a commit's partitions against the
// nested maps the engine used to build, on commits that list partitions
// out of order, twice, with mixed results, and under a topic id that
// names a topic also listed by name.
func TestCommitPartsMatchMaps(t *testing.T) {
	id := decode.TopicID{1, 2, 3}
	cp := func(p int32, off int64, code int16) decode.CommitPartition {
		return decode.CommitPartition{Partition: p, Offset: off, ErrorCode: code}
	}
	for _, c := range []struct {
		name   string
		topics []decode.CommitTopic
	}{
		{"sorted", []decode.CommitTopic{{Topic: "a", Partitions: []decode.CommitPartition{cp(0, 5, 0), cp(1, 6, 0)}}, {Topic: "b", Partitions: []decode.CommitPartition{cp(0, 7, 27)}}}},
		{"unsorted", []decode.CommitTopic{{Topic: "b", Partitions: []decode.CommitPartition{cp(2, 1, 0), cp(0, 2, 22)}}, {Topic: "a", Partitions: []decode.CommitPartition{cp(3, 3, 0)}}}},
		{"twice", []decode.CommitTopic{{Topic: "a", Partitions: []decode.CommitPartition{cp(0, 5, 22), cp(0, 9, 0), cp(1, 1, 0), cp(1, 2, 25), cp(1, 3, 0)}}}},
		{"id and name", []decode.CommitTopic{{Topic: "t", Partitions: []decode.CommitPartition{cp(0, 1, 0), cp(4, 4, 0)}}, {TopicID: id, Partitions: []decode.CommitPartition{cp(0, 8, 27), cp(2, 2, 0)}}}},
		{"empty", []decode.CommitTopic{{Topic: "a"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := New(Config{})
			e.topics.add(&decode.Metadata{Topics: []decode.MetadataTopic{{Name: "t", TopicID: id, Partitions: 5}}}, base)
			g := e.group("g")
			ev := &decode.Event{At: time.Unix(0, 0), RespondedAt: time.Unix(1, 0), Group: "g",
				OffsetCommit: &decode.OffsetCommit{MemberID: "m", Generation: 1, Topics: c.topics}}
			got := new(g.newCommit(ev, nil))
			// The maps, as the engine built them before.
			offsets := map[string]map[int32]int64{}
			var errs map[string]map[int32]string
			failed := false
			for _, tp := range c.topics {
				topic := e.topics.topic(tp.Topic, tp.TopicID)
				for _, p := range tp.Partitions {
					if offsets[topic] == nil {
						offsets[topic] = map[int32]int64{}
					}
					offsets[topic][p.Partition] = p.Offset
					if p.ErrorCode != 0 {
						if errs == nil {
							errs = map[string]map[int32]string{}
						}
						if errs[topic] == nil {
							errs[topic] = map[int32]string{}
						}
						errs[topic][p.Partition] = errorName(p.ErrorCode)
						failed = true
					}
				}
			}
			if !reflect.DeepEqual(commitOffsets(got), offsets) {
				t.Errorf("offsets %v; want %v", commitOffsets(got), offsets)
			}
			if !reflect.DeepEqual(commitErrors(got), errs) {
				t.Errorf("errors %v; want %v", commitErrors(got), errs)
			}
			if got.failed != failed || (len(got.parts) == 0) != (len(offsets) == 0) {
				t.Errorf("failed %v, %d parts; want failed %v, %d topics", got.failed, len(got.parts), failed, len(offsets))
			}
			for i := 1; i < len(got.parts); i++ {
				a, b := got.parts[i-1], got.parts[i]
				at, bt := a.topic.name, b.topic.name
				if at > bt || at == bt && a.partition >= b.partition {
					t.Errorf("parts out of order: %v then %v", a, b)
				}
			}
		})
	}
}
