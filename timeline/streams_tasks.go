package timeline

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/kproxy-dev/kproxy/decode"
)

// The tasks of a streams group (KIP-1071), as sets.

// Task kinds.
const (
	taskActive  = "active"
	taskStandby = "standby"
	taskWarmup  = "warmup"
)

// task is a Kafka Streams task: a subtopology and a partition.
type task struct {
	sub  string
	part int32
}

func (t task) String() string { return t.sub + "_" + strconv.Itoa(int(t.part)) }

func compareTask(a, b task) int {
	return cmp.Or(decode.CompareSubtopology(a.sub, b.sub), cmp.Compare(a.part, b.part))
}

// tasksOf is ts as a sorted set; nil stays nil ("unchanged").
func tasksOf(ts []decode.StreamsTasks) []task {
	if ts == nil {
		return nil
	}
	out := []task{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			out = append(out, task{t.Subtopology, p})
		}
	}
	slices.SortFunc(out, compareTask)
	return slices.Compact(out)
}

// taskMinus is the tasks of a not in b (both sorted).
func taskMinus(a, b []task) []task {
	var out []task
	for _, t := range a {
		if _, ok := slices.BinarySearchFunc(b, t, compareTask); !ok {
			out = append(out, t)
		}
	}
	return out
}

func hasTask(ts []task, t task) bool {
	_, ok := slices.BinarySearchFunc(ts, t, compareTask)
	return ok
}

// taskList renders tasks as "0_0 0_1", or "none".
func taskList(ts []task) string {
	if len(ts) == 0 {
		return "none"
	}
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, " ")
}

func taskStrings(ts []task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}
