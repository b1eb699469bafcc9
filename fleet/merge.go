package fleet

import (
	"container/heap"
	"maps"
	"slices"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/saturate"
)

// DefaultMaxSkew is the largest clock offset between instances the merge
// corrects (--max-skew): an estimate beyond it is refused as a wrong
// match, and counted.
const DefaultMaxSkew = 2 * time.Second

// DefaultSilentAfter is MergeConfig.SilentAfter's default: five marker
// intervals without a word.
const DefaultSilentAfter = 5 * MarkerInterval

// syncTolerance is the offset below which instances' clocks are taken to
// agree: two proxies receive the coordinator's simultaneous answers a few
// microseconds to milliseconds apart, and correcting by that noise would
// move every timestamp of the story for nothing. A later estimate moves
// an instance's offset only when it differs from it by more than this.
const syncTolerance = 10 * time.Millisecond

// MergeConfig says how records of several instances are merged.
type MergeConfig struct {
	// MaxSkew: 0 means DefaultMaxSkew.
	MaxSkew time.Duration
	// Hold is how long a record waits, in the merged stream's time, for
	// records of other instances that belong before it (published later,
	// or stamped by a clock behind): the live view lags by this much. 0
	// means MaxSkew plus two marker intervals.
	Hold time.Duration
	// SilentAfter is how long an instance may go without a record or a
	// marker, in the merged stream's time, before it is reported silent.
	// 0 means DefaultSilentAfter.
	SilentAfter time.Duration
	// OnGap, when set, is called when an instance is found silent, and
	// when a silent one is heard again (Gap.To set).
	OnGap func(Gap)
}

func (c *MergeConfig) defaults() {
	if c.MaxSkew <= 0 {
		c.MaxSkew = DefaultMaxSkew
	}
	if c.Hold <= 0 {
		c.Hold = c.MaxSkew + 2*MarkerInterval
	}
	if c.SilentAfter <= 0 {
		c.SilentAfter = DefaultSilentAfter
	}
}

// Gap is a stretch an instance was silent: killed, or cut off from the
// cluster. What it observed meanwhile is missing from the merged story.
type Gap struct {
	Instance string
	// From is the last time it was heard of, To when it was heard again
	// (zero while silent or when it never was), both in the merged
	// stream's time.
	From, To time.Time
}

// MergeStats counts what a merge did.
type MergeStats struct {
	// Instances seen (runs of an instance count once each).
	Instances int
	// Lost exchanges: gap records, and holes in a run's sequence
	// (records the cluster never acknowledged, or past retention).
	Lost uint64
	// Late counts records that arrived after their place had passed:
	// behind their own run's sequence (left out), or more than Hold
	// behind what the merge had already handed out (handed out all the
	// same, out of time order, as the next of their run).
	Late uint64
	// SkewRefused counts clock offset estimates beyond MaxSkew.
	SkewRefused uint64
	// Offsets are the clock offsets applied, by instance id (runs of one
	// instance share it); instances with none are absent.
	Offsets map[string]time.Duration
	// Gaps are the stretches instances were silent, in order found.
	Gaps []Gap
	// Pending is how many exchanges and gaps wait in the merge for their
	// turn; PeakPending the most that ever waited at once.
	Pending, PeakPending int
}

// item is one exchange or gap of a run, waiting for its turn.
type item struct {
	seq int64
	x   *decode.Exchange // nil for a gap
	gap uint64
	at  time.Time // raw: the instance's clock
}

// seqHeap orders a run's pending items by sequence number.
type seqHeap []*item

func (h seqHeap) Len() int           { return len(h) }
func (h seqHeap) Less(i, j int) bool { return h[i].seq < h[j].seq }
func (h seqHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *seqHeap) Push(v any)        { *h = append(*h, v.(*item)) }
func (h *seqHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// run is one run of one instance: a stream in its own order.
type run struct {
	instance, id string
	offset       time.Duration // its clock minus the reference's
	anchored     bool          // offset is known (or chosen as reference)
	pending      seqHeap
	next         int64 // the next sequence number due; -1 before the first
	lastSeen     time.Time
	stopped      bool // sent its stopping marker
	silent       bool
	groups       map[string]bool // the groups its exchanges were keyed by
}

// corrected is t on the reference clock.
func (r *run) corrected(t time.Time) time.Time { return t.Add(-r.offset) }

// syncKey names a moment the coordinator answered several members at
// once: the JoinGroup responses of one generation (sent when the join
// phase completes), or its SyncGroup responses (sent when the leader's
// plan arrives).
type syncKey struct {
	group string
	api   int16
	gen   int32
}

// addrOwner is the instance a client address was first seen through, and
// when it was last seen, in the merged stream's time.
type addrOwner struct {
	instance string
	last     time.Time
}

// addrKeep is how long a client address unseen is remembered.
const addrKeep = 10 * time.Minute

type syncSample struct {
	r  *run
	at time.Time // raw response time
}

// syncKeep is how long, in the merged stream's time, a moment is kept for
// other instances' answers to be matched with it: those answers were sent
// at once, so they arrive within the hold of each other; a minute is
// ample. Older moments are pruned as often.
const syncKeep = time.Minute

// partState is how far the merge has read one partition.
type partState struct {
	last     time.Time // the latest corrected time read from it
	caughtUp bool      // no more records are known to be waiting in it
}

// Merger merges the records of every instance into one stream of
// exchanges: each run's records in their sequence order, runs merged by
// completion time on one reference clock. An instance's clock offset is
// learnt where the coordinator's own order shows it: it answers the
// JoinGroups of one generation at one moment, and the SyncGroups too, so
// two instances that saw members of one generation saw those answers at
// the same instant. Without such a moment, timestamps are taken as they
// are. A Merger is used by one goroutine.
type Merger struct {
	cfg       MergeConfig
	runs      map[string]*run
	order     []*run // by instance id, then run id: ties in time go first to the first
	parts     map[int32]*partState
	watermark time.Time // the latest corrected time read
	sync      map[syncKey]syncSample
	pruned    time.Time      // when sync was last pruned, in the merged stream's time
	dropped   uint64         // lost since the last exchange handed out
	lastOut   time.Time      // the corrected time of the last exchange handed out
	found     []decode.Blind // found silent, by At, not yet due
	blind     []decode.Blind // due: the merged stream has passed their At
	// addrs are the client addresses handed out, by the instance that
	// first saw each (see qualify).
	addrs map[string]*addrOwner
	// estimates are the latest clock offset estimates, by instance id.
	estimates map[string][]time.Duration
	seen      int // runs ever seen, forgotten ones included
	stats     MergeStats
}

// NewMerger returns an empty Merger with cfg, defaults applied.
func NewMerger(cfg MergeConfig) *Merger {
	cfg.defaults()
	return &Merger{cfg: cfg, runs: map[string]*run{}, parts: map[int32]*partState{},
		sync: map[syncKey]syncSample{}, stats: MergeStats{Offsets: map[string]time.Duration{}},
		addrs: map[string]*addrOwner{}, estimates: map[string][]time.Duration{}}
}

// Expect says partition p has records to read: until it is caught up, the
// merge does not hand out records later than what it read of p.
func (m *Merger) Expect(p int32) {
	if m.parts[p] == nil {
		m.parts[p] = &partState{}
	}
}

// CaughtUp says partition p has no more records waiting (for now).
func (m *Merger) CaughtUp(p int32, caughtUp bool) {
	m.Expect(p)
	m.parts[p].caughtUp = caughtUp
}

func (m *Merger) run(rec *Record) *run {
	id := rec.streamID()
	r := m.runs[id]
	if r != nil {
		return r
	}
	r = &run{instance: rec.Instance, id: rec.Run, next: -1}
	// Runs of an instance already seen share its clock.
	for _, o := range m.order {
		if o.instance == r.instance && o.anchored {
			r.offset, r.anchored = o.offset, true
			break
		}
	}
	m.runs[id] = r
	m.seen++
	i := 0
	for i < len(m.order) && (m.order[i].instance < r.instance || (m.order[i].instance == r.instance && m.order[i].id < r.id)) {
		i++
	}
	m.order = append(m.order, nil)
	copy(m.order[i+1:], m.order[i:])
	m.order[i] = r
	return r
}

// Add takes one record read from partition p. The Merger keeps rec.X.
func (m *Merger) Add(rec Record, p int32) {
	r := m.run(&rec)
	var at time.Time
	switch rec.Kind {
	case KindMarker:
		at = rec.At
		r.stopped = rec.Stopping
	case KindGap:
		at = rec.At
	case KindExchange:
		at = rec.X.CompletedAt()
		m.sample(r, rec.X)
		if rec.Key != "" && rec.Key != rec.Instance && !r.groups[rec.Key] {
			if r.groups == nil {
				r.groups = map[string]bool{}
			}
			r.groups[rec.Key] = true
		}
	}
	c := r.corrected(at)
	if r.silent {
		r.silent = false
		g := Gap{Instance: r.instance, From: r.lastSeen, To: c}
		m.stats.Gaps = append(m.stats.Gaps, g)
		if m.cfg.OnGap != nil {
			m.cfg.OnGap(g)
		}
	}
	r.lastSeen = later(r.lastSeen, c)
	m.Expect(p)
	m.parts[p].last = later(m.parts[p].last, c)
	m.watermark = later(m.watermark, c)
	if m.watermark.Sub(m.pruned) > syncKeep {
		m.pruneSync()
	}
	if rec.Kind == KindMarker {
		return
	}
	if r.next >= 0 && rec.Seq < r.next {
		m.stats.Late++
		return
	}
	heap.Push(&r.pending, &item{seq: rec.Seq, x: rec.X, gap: rec.Dropped, at: at})
	if m.stats.Pending++; m.stats.Pending > m.stats.PeakPending {
		m.stats.PeakPending = m.stats.Pending
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sample learns from a JoinGroup or SyncGroup exchange whose answer the
// coordinator sent to several members at once. It reads the exchange with
// decode.ReadGenerationAnswer, not a Decoder of its own: the pipeline's is
// the one Decoder, and the group, generation and error code are all the
// sample needs.
func (m *Merger) sample(r *run, x *decode.Exchange) {
	if x.ResponseAt.IsZero() {
		return
	}
	a, ok := decode.ReadGenerationAnswer(x)
	if !ok || a.Group == "" || a.ErrorCode != 0 || a.Generation < 0 {
		return
	}
	k := syncKey{group: a.Group, api: x.APIKey, gen: a.Generation}
	first, ok := m.sync[k]
	if !ok {
		m.sync[k] = syncSample{r: r, at: x.ResponseAt}
		return
	}
	if first.r.instance == r.instance {
		return
	}
	m.learn(first.r, first.at, r, x.ResponseAt)
}

// qualify makes x's client address name instance too when another
// instance saw the same address first: sidecars each see their pod's
// consumer as 127.0.0.1 and a port, and two pods may use the same port,
// which would make two clients one (the diagnosis links Fetch requests
// to members by address). Addresses of one host seen through several
// proxies are distinct already, and left as they are.
func (m *Merger) qualify(x *decode.Exchange, instance string, at time.Time) {
	if x.ClientAddr == "" {
		return
	}
	o := m.addrs[x.ClientAddr]
	if o == nil {
		m.addrs[x.ClientAddr] = &addrOwner{instance: instance, last: at}
		return
	}
	o.last = later(o.last, at)
	if o.instance != instance {
		x.ClientAddr += " via " + instance
	}
}

// pruneSync forgets the moments older than syncKeep, and the client
// addresses unseen for addrKeep.
func (m *Merger) pruneSync() {
	for a, o := range m.addrs {
		if m.watermark.Sub(o.last) > addrKeep {
			delete(m.addrs, a)
		}
	}
	m.pruned = m.watermark
	for k, s := range m.sync {
		if m.watermark.Sub(s.r.corrected(s.at)) > syncKeep {
			delete(m.sync, k)
		}
	}
}

// learn takes the coordinator's one moment, seen at a by run ra and at b
// by rb, and sets the offset of the one not yet anchored (or whose offset
// it moves), relative to the other. Two runs with no offset yet: the one of
// the instance whose id sorts first is the reference.
func (m *Merger) learn(ra *run, a time.Time, rb *run, b time.Time) {
	if !ra.anchored && !rb.anchored {
		if rb.instance < ra.instance {
			ra, a, rb, b = rb, b, ra, a
		}
		ra.anchored = true
	}
	if !ra.anchored || (rb.anchored && ra.instance > rb.instance) {
		// Move the other one.
		ra, a, rb, b = rb, b, ra, a
	}
	m.setOffset(rb, b.Sub(ra.corrected(a)))
}

// offsetSamples is how many of an instance's latest offset estimates its
// offset is the median of: one estimate is one moment two processes
// observed some milliseconds apart on a busy machine, and an odd one must
// not move every timestamp of the story.
const offsetSamples = 5

// setOffset takes est, an estimate of r's instance's clock offset, unless
// it is beyond MaxSkew, and gives the instance the median of its latest
// estimates, taken as none within syncTolerance of none, unless that is
// within syncTolerance of what it has.
func (m *Merger) setOffset(r *run, est time.Duration) {
	if est > m.cfg.MaxSkew || est < -m.cfg.MaxSkew {
		m.stats.SkewRefused++
		return
	}
	ss := append(m.estimates[r.instance], est)
	if len(ss) > offsetSamples {
		ss = ss[len(ss)-offsetSamples:]
	}
	m.estimates[r.instance] = ss
	est = median(ss)
	if abs(est) <= syncTolerance {
		est = 0
	}
	if r.anchored && (est == r.offset || (est != 0 && abs(est-r.offset) <= syncTolerance)) {
		return
	}
	for _, o := range m.order {
		if o.instance == r.instance {
			o.offset, o.anchored = est, true
		}
	}
	if est != 0 {
		m.stats.Offsets[r.instance] = est
	} else {
		delete(m.stats.Offsets, r.instance)
	}
}

// median is the median of ds, the mean of the middle two for an even count.
func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return s[n/2-1] + (s[n/2]-s[n/2-1])/2
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// safe is the corrected time up to which every record has been read, as
// far as the merge can tell: the least of the partitions still being read
// up to, or the watermark once all are caught up.
func (m *Merger) safe() time.Time {
	s := m.watermark
	for _, p := range m.parts {
		if !p.caughtUp && p.last.Before(s) {
			s = p.last
		}
	}
	return s
}

// Ready is the merged stream's time before which every exchange has been
// handed out by Next, as far as the merge can tell: an exchange read
// later than the merge's Hold after its time may still come (it is
// counted late, MergeStats.Late).
func (m *Merger) Ready() time.Time { return m.safe().Add(-m.cfg.Hold) }

// readAhead is how far, in the merged stream's time, a partition may be
// read ahead of the one the merge waits for before its reader pauses it.
// Pausing at once (0) makes the reader resume a partition for every fetch
// and wait out the broker's fetch wait each time, which makes a replay
// several times as long; a second costs little memory (docs/benchmarks.md,
// Fleet: replay's merge from an events topic).
const readAhead = MarkerInterval

// Ahead says partition p has been read further ahead of the least-read
// partition than readAhead: what more is read of it would only wait in
// the merge, so its reader pauses it. The partition that holds the merge
// back is never ahead, nor is one caught up.
func (m *Merger) Ahead(p int32) bool {
	st := m.parts[p]
	return st != nil && !st.caughtUp && st.last.Sub(m.safe()) > readAhead
}

// Next returns the next exchange of the merged stream and how many were
// lost before it, or ok false when none may be handed out yet. final says
// nothing more will be added: everything pending is handed out.
func (m *Merger) Next(final bool) (x *decode.Exchange, dropped uint64, ok bool) {
	ready := m.Ready()
	m.findSilent()
	for {
		var best *run
		var bestAt time.Time
		for _, r := range m.order {
			it := m.head(r, final, ready)
			if it == nil {
				continue
			}
			if at := r.corrected(it.at); best == nil || at.Before(bestAt) {
				best, bestAt = r, at
			}
		}
		if best == nil || (!final && bestAt.After(ready)) {
			m.release(ready, final)
			m.forget(ready)
			return nil, 0, false
		}
		m.release(bestAt, false)
		it := heap.Pop(&best.pending).(*item)
		m.stats.Pending--
		best.next = it.seq + 1
		if m.lastOut.Sub(bestAt) > m.cfg.Hold {
			m.stats.Late++
		}
		m.lastOut = later(m.lastOut, bestAt)
		if it.x == nil {
			m.dropped = saturate.Add(m.dropped, it.gap)
			m.stats.Lost = saturate.Add(m.stats.Lost, it.gap)
			continue
		}
		x = it.x
		if best.offset != 0 {
			x.RequestAt = shiftBack(x.RequestAt, best.offset)
			x.ResponseAt = shiftBack(x.ResponseAt, best.offset)
		}
		m.qualify(x, best.instance, bestAt)
		dropped, m.dropped = m.dropped, 0
		return x, dropped, true
	}
}

func shiftBack(t time.Time, d time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(-d)
}

// head is r's next item when it may go out: the one due in sequence, or,
// when the one due has not come and the earliest pending has waited past
// ready (or final), that one, the missing ones counted as lost.
func (m *Merger) head(r *run, final bool, ready time.Time) *item {
	if len(r.pending) == 0 {
		return nil
	}
	it := r.pending[0]
	if it.seq == r.next {
		return it
	}
	if !final && r.corrected(it.at).After(ready) {
		return nil
	}
	if r.next >= 0 {
		n := uint64(it.seq - r.next)
		m.dropped = saturate.Add(m.dropped, n)
		m.stats.Lost = saturate.Add(m.stats.Lost, n)
	}
	r.next = it.seq
	return it
}

// forget drops the runs that sent their stopping marker, have nothing
// pending, and were last heard of more than MaxSkew before ready: every
// partition has been read past what they published, so nothing more of
// theirs can come in time. A live view would otherwise keep every run
// of every restart for as long as it follows the topic.
func (m *Merger) forget(ready time.Time) {
	n := 0
	for _, r := range m.order {
		if r.stopped && len(r.pending) == 0 && ready.Sub(r.lastSeen) > m.cfg.MaxSkew {
			delete(m.runs, r.instance+"\x00"+r.id)
			continue
		}
		m.order[n] = r
		n++
	}
	clear(m.order[n:])
	m.order = m.order[:n]
}

// findSilent reports the runs not heard of for SilentAfter, unless they
// said they were stopping.
func (m *Merger) findSilent() {
	for _, r := range m.order {
		if r.stopped || r.silent || r.lastSeen.IsZero() || m.watermark.Sub(r.lastSeen) <= m.cfg.SilentAfter {
			continue
		}
		r.silent = true
		for _, grp := range sortedKeys(r.groups) {
			m.found = append(m.found, decode.Blind{Group: grp, Instance: r.instance, At: r.lastSeen})
		}
		slices.SortStableFunc(m.found, func(a, b decode.Blind) int { return a.At.Compare(b.At) })
		g := Gap{Instance: r.instance, From: r.lastSeen}
		m.stats.Gaps = append(m.stats.Gaps, g)
		if m.cfg.OnGap != nil {
			m.cfg.OnGap(g)
		}
	}
}

// release makes due the blind groups found whose At is before until (all
// of them when all is set): the merged stream is about to hand out, or has
// handed out, everything before it. Found while records are read ahead,
// they must reach the timeline in order with the exchanges, or it would be
// told of a silence before it knows the group.
func (m *Merger) release(until time.Time, all bool) {
	n := 0
	for n < len(m.found) && (all || m.found[n].At.Before(until)) {
		n++
	}
	if n == 0 {
		return
	}
	m.blind = append(m.blind, m.found[:n]...)
	m.found = append(m.found[:0], m.found[n:]...)
}

// TakeBlind returns the groups found blind, due since the last call: those
// whose exchanges a run that went silent had published, once the merged
// stream has handed out what came before the silence. Taken after each
// Next, they belong before the exchange it returned.
func (m *Merger) TakeBlind() []decode.Blind {
	b := m.blind
	m.blind = nil
	return b
}

func sortedKeys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}

// Dropped returns the losses not yet reported with an exchange, and
// forgets them: for the end of the stream.
func (m *Merger) Dropped() uint64 {
	d := m.dropped
	m.dropped = 0
	return d
}

// Stats returns the counters so far.
func (m *Merger) Stats() MergeStats {
	st := m.stats
	st.Instances = m.seen
	st.Offsets = make(map[string]time.Duration, len(m.stats.Offsets))
	for k, v := range m.stats.Offsets {
		st.Offsets[k] = v
	}
	st.Gaps = append([]Gap(nil), m.stats.Gaps...)
	return st
}

// Partitions returns the partitions the merge reads, in order.
func (m *Merger) Partitions() []int32 {
	return slices.Sorted(maps.Keys(m.parts))
}
