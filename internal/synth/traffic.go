// Package synth simulates the traffic a kproxy in front of a Kafka cluster
// observes: many consumer groups joining, syncing, heartbeating, committing
// and now and then rebalancing, plus the fetch path's ApiVersions and
// Metadata. Every request and response is encoded by kmsg, behind the
// headers a client and a broker write, so the exchanges decode as real
// ones do. It feeds kproxy-journalgen and the replay benchmarks.
package synth

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// Options tune a Traffic.
type Options struct {
	// Seed makes the traffic reproducible: the same options give the same
	// exchanges.
	Seed uint64
	// Groups is the number of consumer groups. Default 2000.
	Groups int
	// MaxMembers bounds a group's size. Default 32.
	MaxMembers int
	// Mix is the kind of traffic (default Realistic).
	Mix Mix
	// Start is when the first group starts. Default 2026-01-01 UTC.
	Start time.Time
	// Heartbeat is how often members heartbeat (default 3 s, at most
	// MaxHeartbeat); they commit every second heartbeat, and the session
	// and rebalance timeouts they ask for are 15 and 100 heartbeats (45 s
	// and 5 minutes by default), so that a slower heartbeat is as legal
	// and as far from expiring. Rebalances,
	// metadata refreshes and short-lived clients keep their rates in time.
	// A longer interval makes the same span of traffic time fewer
	// exchanges: for long memory runs, where heartbeats and steady commits
	// change nothing that is kept.
	Heartbeat time.Duration
	// Jobs is the number of short-lived groups running at any time, beside
	// Groups: consumers such as console consumers or batch jobs that use a
	// new group id per run. Each runs 5 to 60 minutes with 1 to 4 members
	// (one more while one comes and goes), which then leave, and the next run in its slot starts within 10
	// minutes under a new id. Default none.
	Jobs int
}

// MaxHeartbeat is the longest Options.Heartbeat: its session timeout, 15
// heartbeats, is then 30 minutes, Kafka's group.max.session.timeout.ms.
const MaxHeartbeat = 2 * time.Minute

// Traffic yields the exchanges of many simulated groups in the order a
// proxy observes them: by completion (response) time.
type Traffic struct {
	opts       Options
	mix        mixParams
	rng        *rand.Rand
	groups     groupHeap
	pending    exchangeHeap // emitted, not yet returned by Next
	seq        uint64       // emission order, to break ties in pending
	nextConn   uint64
	nextClient int
	counts     map[int16]uint64
	enc        encoder
}

// New returns the traffic of opts (see Options for defaults): the groups
// start within the first 5 seconds after opts.Start.
func New(opts Options) *Traffic {
	if opts.Groups <= 0 {
		opts.Groups = 2000
	}
	if opts.MaxMembers <= 0 {
		opts.MaxMembers = 32
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = heartbeatEvery
	}
	t := &Traffic{
		opts:   opts,
		mix:    opts.Mix.params(),
		rng:    rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		counts: map[int16]uint64{},
	}
	for i := range opts.Groups {
		t.groups = append(t.groups, t.newGroup(i))
	}
	for i := range opts.Jobs {
		t.groups = append(t.groups, t.newJob(i, 0, opts.Start.Add(t.jitter(10*time.Minute))))
	}
	heap.Init(&t.groups)
	return t
}

// Next returns the next exchange. The traffic never ends.
func (t *Traffic) Next() *decode.Exchange {
	// Every exchange still to be emitted completes after the next group
	// action, so the earliest pending one is next once it completes no
	// later than that.
	for len(t.pending) == 0 || t.pending[0].done.After(t.groups[0].next) {
		g := t.groups[0]
		t.step(g)
		heap.Fix(&t.groups, 0)
	}
	x := heap.Pop(&t.pending).(pendingExchange).encode(&t.enc)
	t.counts[x.APIKey]++
	return x
}

// Counts returns how many exchanges of each API key Next returned.
func (t *Traffic) Counts() map[int16]uint64 {
	c := make(map[int16]uint64, len(t.counts))
	for k, v := range t.counts {
		c[k] = v
	}
	return c
}

// emit queues an exchange that completes at done, encoded by encode when
// Next returns it.
func (t *Traffic) emit(done time.Time, encode encodeFunc) {
	t.seq++
	heap.Push(&t.pending, pendingExchange{done: done, seq: t.seq, encode: encode})
}

// rounds is n rounds of the default heartbeat interval as rounds of the
// traffic's (at least 1): the same span of time.
func (t *Traffic) rounds(n int) int {
	return max(1, int(int64(n)*int64(heartbeatEvery)/int64(t.opts.Heartbeat)))
}

// latency is a plausible broker round trip.
func (t *Traffic) latency() time.Duration {
	return time.Duration(200+t.rng.IntN(2800)) * time.Microsecond
}

// jitter is a delay of up to d.
func (t *Traffic) jitter(d time.Duration) time.Duration {
	return time.Duration(t.rng.Int64N(int64(d)))
}

// conn opens a new simulated connection of client host n (see host) to a
// broker (-1: the bootstrap listener).
func (t *Traffic) conn(host int, clientID string, broker int32) client {
	t.nextConn++
	addr := fmt.Sprintf("10.%d.%d.%d:%d", host>>16&255, host>>8&255, host&255, 30000+t.rng.IntN(30000))
	return client{connID: t.nextConn, addr: addr, clientID: clientID, brokerID: broker}
}

// host is a new client host: its number n, whose address is 10.0.0.0
// plus n.
func (t *Traffic) host() int {
	t.nextClient++
	return t.nextClient
}

// groupHeap orders groups by when they act next.
type groupHeap []*group

func (h groupHeap) Len() int           { return len(h) }
func (h groupHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h groupHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *groupHeap) Push(x any)        { *h = append(*h, x.(*group)) }
func (h *groupHeap) Pop() any {
	old := *h
	g := old[len(old)-1]
	*h = old[:len(old)-1]
	return g
}

// pendingExchange is an emitted exchange waiting for its turn: its frames
// are encoded only then, so that the exchanges emitted ahead (a metadata
// refresh up to a heartbeat ahead, a short-lived client's visit) hold no
// frames while they wait.
type pendingExchange struct {
	done   time.Time // when its response completes
	seq    uint64
	encode encodeFunc
}

// exchangeHeap orders exchanges by completion time, then emission order.
type exchangeHeap []pendingExchange

func (h exchangeHeap) Len() int { return len(h) }
func (h exchangeHeap) Less(i, j int) bool {
	if a, b := h[i].done, h[j].done; !a.Equal(b) {
		return a.Before(b)
	}
	return h[i].seq < h[j].seq
}
func (h exchangeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *exchangeHeap) Push(x any)   { *h = append(*h, x.(pendingExchange)) }
func (h *exchangeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = pendingExchange{}
	*h = old[:len(old)-1]
	return x
}
