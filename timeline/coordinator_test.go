package timeline

import (
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestCoordinatorKeysOfOtherTypes: FindCoordinator for a transactional id
// or a share partition (key types 1 and 2) makes no group of its key; for a
// group (0) it records the group's coordinator.
func TestCoordinatorKeysOfOtherTypes(t *testing.T) {
	e := New(Config{})
	at := time.Unix(100, 0)
	for keyType, key := range map[int8]string{0: "orders", 1: "txn-producer-1", 2: "orders:AAAAAAAAAAAAAAAAAAAAAA:0"} {
		e.Add(decode.Event{At: at, RespondedAt: at.Add(time.Millisecond), Group: key,
			FindCoordinator: &decode.FindCoordinator{KeyType: keyType, NodeID: 1, Host: "b1", Port: 9092}})
	}
	r := e.Report()
	if len(r.Groups) != 1 || r.Groups[0].Group != "orders" {
		var names []string
		for _, g := range r.Groups {
			names = append(names, g.Group)
		}
		t.Fatalf("groups %q; want only orders", names)
	}
	if c := r.Groups[0].Coordinator; c == nil || c.NodeID != 1 {
		t.Errorf("coordinator %+v; want node 1", c)
	}
}
