package proxy

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestQueueTicksWhenIdle: an empty queue hands its reader a tick (a nil
// exchange, no error) once nothing has come for tickEvery, stamped
// tickSlack behind the wall clock; an exchange queued first is handed out
// first, and the end still ends.
func TestQueueTicksWhenIdle(t *testing.T) {
	var stats counters
	q := newQueue(4, &stats)
	join := &decode.Exchange{APIKey: int16(kmsg.JoinGroup), Request: []byte{1}, Response: []byte{2}, ResponseAt: time.Now()}
	q.offer(join, 1<<20)
	if x, _, err := q.Next(); x != join || err != nil {
		t.Fatalf("Next = %v, %v; want the exchange queued", x, err)
	}
	before := time.Now()
	x, dropped, err := q.Next()
	after := time.Now()
	if x != nil || dropped != 0 || err != nil {
		t.Fatalf("Next on an idle queue = %v, %d, %v; want a tick", x, dropped, err)
	}
	if waited := after.Sub(before); waited < tickEvery {
		t.Errorf("ticked after %v; want at least %v of idleness", waited, tickEvery)
	}
	if at := q.Tick(); at.Before(before.Add(tickEvery-tickSlack)) || at.After(after.Add(-tickSlack)) {
		t.Errorf("tick at %v; want within [%v, %v]", at, before.Add(tickEvery-tickSlack), after.Add(-tickSlack))
	}
	q.end()
	if _, _, err := q.Next(); err == nil {
		t.Error("Next after the end: no error; want io.EOF")
	}
}
