package diagnose

import (
	"slices"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// streamsWarmup: A runs a classic Kafka Streams group's three tasks
// alone; B joins at 10 s and gets no partition, with standby task 0_2 (a
// KIP-441 warm-up) when warm, and stays so for 50 s.
func streamsWarmup(warm bool) *script {
	s := newScript("g")
	s.round(0, 1, []mc{mA}, map[string][]int32{"A-1": {0, 1, 2}})
	s.hbs(cA, "A-1", 1, 3, 10, 3)
	s.round(10, 2, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1, 2}})
	for _, it := range s.items {
		sg := it.ev.SyncGroup
		if sg == nil || sg.Generation != 2 {
			continue
		}
		info := func(id string) *decode.StreamsAssignmentInfo {
			a := &decode.StreamsAssignmentInfo{Version: 11, NextRebalanceMs: decode.StreamsNoRebalance}
			if id == "B-1" && warm {
				a.Standby = []decode.StreamsTaskID{{Partition: 2}}
			}
			return a
		}
		sg.ProtocolName = decode.AssignorStreams
		own := *sg.Assignment
		own.Streams = info(sg.MemberID)
		sg.Assignment = &own
		for i := range sg.Plan {
			p := *sg.Plan[i].Assignment
			p.Streams = info(sg.Plan[i].MemberID)
			sg.Plan[i].Assignment = &p
		}
	}
	s.hbs(cA, "A-1", 2, 13, 60, 3)
	s.hbs(cB, "B-1", 2, 13, 60, 3)
	return s
}

// TestStreamsWarmupIsNotIdle checks that a classic Kafka Streams member
// with only a warm-up task is not reported as assigned nothing, while the
// same member without it is.
func TestStreamsWarmupIsNotIdle(t *testing.T) {
	for _, c := range []struct {
		warm bool
		want bool
	}{{true, false}, {false, true}} {
		fs, _ := diagnoseScript(t, Config{UnownedAfter: 5 * time.Second}, streamsWarmup(c.warm), 60)
		got := slices.ContainsFunc(fs, func(f Finding) bool { return f.Kind == MemberWithoutPartitions })
		if got != c.want {
			t.Errorf("warm-up %v: member_without_partitions %v, want %v: %+v", c.warm, got, c.want, fs)
		}
	}
}
