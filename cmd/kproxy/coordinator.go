package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/decode"
)

// offsetsTopic is the internal topic whose partition leaders coordinate
// consumer groups.
const offsetsTopic = "__consumer_offsets"

func newCoordinatorCmd() *cobra.Command {
	var (
		partitions int32
		upstreams  []string
		timeout    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "coordinator GROUP",
		Short: "Which __consumer_offsets partition and which broker coordinate a group",
		Long: `coordinator computes the __consumer_offsets partition of a consumer group the
way Kafka does (Utils.abs(groupId.hashCode()) % partitions) and shows the
arithmetic. With --upstream it also asks the cluster for the real partition
count, the leader of that partition and FindCoordinator's answer, and says
whether they agree.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := coordinatorReport{
				Group:      args[0],
				Partitions: partitions,
				CountFrom:  "default offsets.topic.num.partitions",
			}
			if cmd.Flags().Changed("partitions") {
				if partitions < 1 {
					return fmt.Errorf("coordinator: --partitions %d: must be at least 1", partitions)
				}
				r.CountFrom = "--partitions"
			}
			if len(upstreams) > 0 {
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				defer cancel()
				if err := r.ask(ctx, upstreams); err != nil {
					return err
				}
			}
			r.compute()
			r.write(cmd.OutOrStdout())
			return nil
		},
	}
	f := cmd.Flags()
	f.Int32Var(&partitions, "partitions", decode.DefaultOffsetsPartitions,
		"partition count of __consumer_offsets (offsets.topic.num.partitions); with --upstream the cluster's count wins")
	f.StringSliceVar(&upstreams, "upstream", nil, "brokers to ask, HOST:PORT[,HOST:PORT]")
	f.DurationVar(&timeout, "timeout", 10*time.Second, "with --upstream, how long to wait for the cluster")
	return cmd
}

// coordinatorReport is what `kproxy coordinator` found out about one group.
type coordinatorReport struct {
	Group string
	// Partitions is the partition count used, and CountFrom where it came
	// from; Flagged is a different --partitions the cluster overrode.
	Partitions int32
	CountFrom  string
	Flagged    int32

	// Computed by compute.
	Hash, Abs, Partition int32

	// Filled by ask, from the cluster.
	Asked bool
	// TopicErr is why the topic's partition count is unknown.
	TopicErr error
	// Leaders maps each __consumer_offsets partition to its leader.
	Leaders map[int32]int32
	// Brokers maps node ids to HOST:PORT.
	Brokers map[int32]string
	// Coordinator is FindCoordinator's node, or CoordinatorErr.
	Coordinator    int32
	CoordinatorAt  string
	CoordinatorErr error
}

// compute does Kafka's arithmetic with the partition count in r.
func (r *coordinatorReport) compute() {
	r.Hash = decode.JavaStringHashCode(r.Group)
	r.Abs = decode.KafkaAbs(r.Hash)
	r.Partition = decode.CoordinatorPartition(r.Group, r.Partitions)
}

// ask queries the cluster: FindCoordinator first (on Apache Kafka it is
// what creates __consumer_offsets), then the topic's metadata.
func (r *coordinatorReport) ask(ctx context.Context, upstreams []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(upstreams...))
	if err != nil {
		return fmt.Errorf("coordinator: client for %v: %w", upstreams, err)
	}
	adm := kadm.NewClient(cl)
	defer adm.Close()
	r.Asked = true

	fc := adm.FindGroupCoordinators(ctx, r.Group)[r.Group]
	r.Coordinator, r.CoordinatorErr = fc.NodeID, fc.Err
	if fc.Err == nil {
		r.CoordinatorAt = net.JoinHostPort(fc.Host, strconv.Itoa(int(fc.Port)))
	}

	md, err := adm.Metadata(ctx, offsetsTopic)
	if err != nil {
		return fmt.Errorf("coordinator: metadata from %v: %w", upstreams, err)
	}
	r.Brokers = make(map[int32]string, len(md.Brokers))
	for _, b := range md.Brokers {
		r.Brokers[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	td, ok := md.Topics[offsetsTopic]
	switch {
	case !ok:
		r.TopicErr = kerr.UnknownTopicOrPartition
	case td.Err != nil:
		r.TopicErr = td.Err
	case len(td.Partitions) == 0:
		r.TopicErr = errors.New("the topic has no partitions")
	}
	if r.TopicErr != nil {
		return nil
	}
	if r.CountFrom == "--partitions" && r.Partitions != int32(len(td.Partitions)) {
		r.Flagged = r.Partitions
	}
	r.Partitions = int32(len(td.Partitions))
	r.CountFrom = "the cluster"
	r.Leaders = make(map[int32]int32, len(td.Partitions))
	for p, d := range td.Partitions {
		r.Leaders[p] = d.Leader
	}
	return nil
}

// node formats a node id with its address when known.
func (r *coordinatorReport) node(id int32) string {
	if addr, ok := r.Brokers[id]; ok {
		return fmt.Sprintf("node %d (%s)", id, addr)
	}
	return fmt.Sprintf("node %d", id)
}

// write prints the arithmetic, then what the cluster said, then a verdict.
func (r *coordinatorReport) write(w io.Writer) {
	fmt.Fprintf(w, "group %q\n", r.Group)
	fmt.Fprintf(w, "hashCode(%q) = %d; abs = %d (Utils.abs); %d %% %d = %d\n",
		r.Group, r.Hash, r.Abs, r.Abs, r.Partitions, r.Partition)
	fmt.Fprintf(w, "%s partition %d (partition count %d from %s)\n", offsetsTopic, r.Partition, r.Partitions, r.CountFrom)
	if r.Flagged != 0 {
		fmt.Fprintf(w, "note: --partitions %d ignored: the cluster's %s has %d partitions\n", r.Flagged, offsetsTopic, r.Partitions)
	}
	if !r.Asked {
		fmt.Fprintf(w, "the coordinator is the leader of that partition; pass --upstream HOST:PORT to ask the cluster\n")
		return
	}

	leader, haveLeader := int32(-1), false
	if r.TopicErr != nil {
		fmt.Fprintf(w, "cluster: %s is not available: %v\n", offsetsTopic, r.TopicErr)
		fmt.Fprintf(w, "  (Apache Kafka creates it on the first FindCoordinator; brokers that are not Kafka, such as kfake, may keep offsets without it)\n")
	} else {
		leader, haveLeader = r.Leaders[r.Partition]
		switch {
		case !haveLeader:
			fmt.Fprintf(w, "cluster: partition %d of %s is missing from the metadata\n", r.Partition, offsetsTopic)
		case leader < 0:
			fmt.Fprintf(w, "cluster: partition %d of %s has no leader\n", r.Partition, offsetsTopic)
			haveLeader = false
		default:
			fmt.Fprintf(w, "cluster: leader of %s partition %d is %s\n", offsetsTopic, r.Partition, r.node(leader))
		}
	}
	if r.CoordinatorErr != nil {
		fmt.Fprintf(w, "FindCoordinator: error: %v\n", r.CoordinatorErr)
	} else {
		fmt.Fprintf(w, "FindCoordinator: node %d (%s)\n", r.Coordinator, r.CoordinatorAt)
	}
	fmt.Fprintln(w, r.verdict(leader, haveLeader))
}

// verdict compares the computed partition's leader with FindCoordinator.
func (r *coordinatorReport) verdict(leader int32, haveLeader bool) string {
	switch {
	case !haveLeader || r.CoordinatorErr != nil:
		return "verdict: cannot compare (see above)"
	case leader == r.Coordinator:
		return fmt.Sprintf("verdict: agree: FindCoordinator names node %d, the leader of partition %d", leader, r.Partition)
	}
	return fmt.Sprintf("verdict: DISAGREE: FindCoordinator names node %d but partition %d is led by node %d"+
		" (a leader change in progress, or a broker that does not place groups as Kafka does)",
		r.Coordinator, r.Partition, leader)
}
