//go:build e2e

package e2e

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func itoa(n int) string { return strconv.Itoa(n) }

// admin is a kadm client straight to the broker, for set-up and for the
// broker's own answers a scenario compares kproxy with.
func admin(t *testing.T) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokerAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// freshTopic (re)creates topic with the given partitions and deletes group,
// so that a scenario starts from nothing even on a broker that ran it before.
func freshTopic(t *testing.T, topic string, partitions int32, group string) {
	t.Helper()
	adm := admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for group != "" {
		// The first group request of a fresh broker creates
		// __consumer_offsets: retry while the coordinator is not there yet.
		// A member left over from an earlier, killed run keeps the group
		// non-empty until its session times out: retry then too.
		res, err := adm.DeleteGroups(ctx, group)
		if err == nil {
			err = res[group].Err
		}
		if err == nil || errors.Is(err, kerr.GroupIDNotFound) {
			break
		}
		if !(kerr.IsRetriable(err) || errors.Is(err, kerr.NonEmptyGroup)) || ctx.Err() != nil {
			t.Fatalf("delete group %s: %v", group, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
	var id kadm.TopicID
	for {
		res, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
		if err == nil && res.Err == nil {
			id = res.ID
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("create topic %s: %v %v", topic, err, res.Err)
		}
		// A topic being deleted exists until the controller is done with it.
		time.Sleep(200 * time.Millisecond)
	}
	// Wait until the broker serves every partition of the new topic: its
	// metadata may still name the deleted one for a moment, and a client
	// that sees the id change abandons its records (UNKNOWN_TOPIC_ID).
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && td.ID == id && len(td.Partitions) == int(partitions) {
				ready := true
				for _, p := range td.Partitions {
					ready = ready && p.Err == nil && p.Leader >= 0
				}
				if ready {
					return
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s not ready: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
