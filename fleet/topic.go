package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultPartitions is the events topic's partition count when kproxy
// creates it: groups spread over them by key.
const DefaultPartitions = 12

// EnsureTopic creates topic with partitions (0 means DefaultPartitions)
// and retention (0 means the cluster's default) unless it exists.
func EnsureTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32, retention time.Duration) error {
	if partitions <= 0 {
		partitions = DefaultPartitions
	}
	configs := map[string]*string{}
	if retention > 0 {
		ms := strconv.FormatInt(retention.Milliseconds(), 10)
		configs["retention.ms"] = &ms
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fleet: create topic %s: %w", topic, err)
	}
	return nil
}
