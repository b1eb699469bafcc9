package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestCoordinatorOffline(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"kafka docs example", []string{"coordinator", "test_group_1"}, `group "test_group_1"
hashCode("test_group_1") = -993617980; abs = 993617980 (Utils.abs); 993617980 % 50 = 30
__consumer_offsets partition 30 (partition count 50 from default offsets.topic.num.partitions)
the coordinator is the leader of that partition; pass --upstream HOST:PORT to ask the cluster
`},
		{"partitions flag", []string{"coordinator", "test_group_1", "--partitions", "7"}, `group "test_group_1"
hashCode("test_group_1") = -993617980; abs = 993617980 (Utils.abs); 993617980 % 7 = 5
__consumer_offsets partition 5 (partition count 7 from --partitions)
the coordinator is the leader of that partition; pass --upstream HOST:PORT to ask the cluster
`},
		{"min value hash", []string{"coordinator", "polygenelubricants"}, `group "polygenelubricants"
hashCode("polygenelubricants") = -2147483648; abs = 0 (Utils.abs); 0 % 50 = 0
__consumer_offsets partition 0 (partition count 50 from default offsets.topic.num.partitions)
the coordinator is the leader of that partition; pass --upstream HOST:PORT to ask the cluster
`},
		{"surrogate pair", []string{"coordinator", "grp-😀"}, `group "grp-😀"
hashCode("grp-😀") = -1235730613; abs = 1235730613 (Utils.abs); 1235730613 % 50 = 13
__consumer_offsets partition 13 (partition count 50 from default offsets.topic.num.partitions)
the coordinator is the leader of that partition; pass --upstream HOST:PORT to ask the cluster
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runKproxy(t, tt.args...)
			if err != nil {
				t.Fatalf("kproxy %v: %v", tt.args, err)
			}
			if got != tt.want {
				t.Errorf("kproxy %v printed\n%s\nwant\n%s", tt.args, got, tt.want)
			}
		})
	}
}

func TestCoordinatorArgErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no group", []string{"coordinator"}, "accepts 1 arg(s), received 0"},
		{"zero partitions", []string{"coordinator", "g", "--partitions", "0"}, "coordinator: --partitions 0: must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runKproxy(t, tt.args...)
			if err == nil || err.Error() != tt.want {
				t.Errorf("kproxy %v error = %v; want %q", tt.args, err, tt.want)
			}
		})
	}
}

// kfake places groups with its own hash, not on __consumer_offsets, and
// does not create that topic. Seeded with it, on one broker every partition
// and every group is on node 0, so the answers must agree.
func TestCoordinatorUpstreamKfake(t *testing.T) {
	tests := []struct {
		name string
		opts []kfake.Opt
		args []string
		want []string // lines that must appear, in order
	}{
		{"no offsets topic", []kfake.Opt{kfake.NumBrokers(1)}, nil, []string{
			`993617980 % 50 = 30`,
			`(partition count 50 from default offsets.topic.num.partitions)`,
			`cluster: __consumer_offsets is not available: UNKNOWN_TOPIC_OR_PARTITION`,
			`FindCoordinator: node 0 (127.0.0.1:`,
			`verdict: cannot compare (see above)`,
		}},
		{"seeded offsets topic", []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(10, "__consumer_offsets")}, nil, []string{
			`993617980 % 10 = 0`,
			`__consumer_offsets partition 0 (partition count 10 from the cluster)`,
			`cluster: leader of __consumer_offsets partition 0 is node 0 (127.0.0.1:`,
			`FindCoordinator: node 0 (127.0.0.1:`,
			`verdict: agree: FindCoordinator names node 0, the leader of partition 0`,
		}},
		{"cluster count beats --partitions", []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, "__consumer_offsets")},
			[]string{"--partitions", "50"}, []string{
				`993617980 % 3 = 1`,
				`(partition count 3 from the cluster)`,
				`note: --partitions 50 ignored: the cluster's __consumer_offsets has 3 partitions`,
				`verdict: agree`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startKfake(t, tt.opts...)
			args := append([]string{"coordinator", "test_group_1", "--upstream", strings.Join(c.ListenAddrs(), ",")}, tt.args...)
			got, err := runKproxy(t, args...)
			if err != nil {
				t.Fatalf("kproxy %v: %v\n%s", args, err, got)
			}
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order); output:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestCoordinatorVerdict(t *testing.T) {
	tests := []struct {
		name       string
		r          coordinatorReport
		leader     int32
		haveLeader bool
		want       string
	}{
		{"agree", coordinatorReport{Partition: 4, Coordinator: 2}, 2, true,
			"verdict: agree: FindCoordinator names node 2, the leader of partition 4"},
		{"disagree", coordinatorReport{Partition: 4, Coordinator: 1}, 2, true,
			"verdict: DISAGREE: FindCoordinator names node 1 but partition 4 is led by node 2" +
				" (a leader change in progress, or a broker that does not place groups as Kafka does)"},
		{"no leader", coordinatorReport{Partition: 4, Coordinator: 1}, -1, false, "verdict: cannot compare (see above)"},
		{"coordinator error", coordinatorReport{Partition: 4, CoordinatorErr: errors.New("x")}, 2, true,
			"verdict: cannot compare (see above)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.verdict(tt.leader, tt.haveLeader); got != tt.want {
				t.Errorf("verdict() = %q; want %q", got, tt.want)
			}
		})
	}
}
