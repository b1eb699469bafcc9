package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/fleet"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
)

const publishUsage = `usage: kproxy-journalgen publish -brokers HOST:PORT -topic NAME [-instances 20] [-groups 2000] [-for 60s] [-speed 1]
       kproxy-journalgen publish -dry [-instances 20] [-groups 2000] [-for 10m]`

// publishRun is `kproxy-journalgen publish`: the synth traffic of -groups
// groups, as a fleet of -instances kproxy sidecars observes it (each
// client host behind one instance; fleetTraffic), published to the events
// topic by one fleet.Publisher per instance, each with its own client as
// separate processes would have, paced so that -for of traffic time takes
// -for / -speed of wall time. It prints what was published (records,
// record bytes, records and bytes per second, by API; drops), the topic's
// size on the broker (compressed), and the rates per group that
// docs/fleet.md's sizing uses. With -dry it publishes nothing and prints
// the same sizes, at full speed.
func publishRun(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("kproxy-journalgen publish", flag.ContinueOnError)
	brokers := fs.String("brokers", "", "the cluster to publish to (HOST:PORT[,HOST:PORT])")
	topic := fs.String("topic", "", "the events topic (created when missing)")
	partitions := fs.Int("partitions", 12, "the events topic's partitions when it is created")
	instances := fs.Int("instances", 20, "kproxy instances simulated, each its own publisher and client")
	groups := fs.Int("groups", 2000, "number of consumer groups")
	members := fs.Int("members", 32, "most members in a group (at least 3)")
	mixFlag := fs.String("mix", "realistic", "traffic mix: realistic or rebalance-heavy")
	seed := fs.Uint64("seed", 1, "random seed")
	span := fs.Duration("for", time.Minute, "traffic time to publish")
	speed := fs.Float64("speed", 1, "traffic time per wall-clock time (1: real time)")
	fetches := fs.Int("fetches-per-heartbeat", 6, "Fetch requests added per Heartbeat (fetch.max.wait.ms 500 ms against a 3 s heartbeat)")
	warmup := fs.Duration("warmup", 3*time.Minute, "traffic time generated first and not published: the groups' first joins, and the quiet minutes before their first rebalances (2 to 10 minutes in)")
	dry := fs.Bool("dry", false, "publish nothing: print the sizes of what would be published, at full speed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || (!*dry && (*brokers == "" || *topic == "")) {
		return fmt.Errorf("%s", publishUsage)
	}
	if *instances < 1 || *groups < 1 || *members < 3 || *speed <= 0 || *fetches < 0 {
		return fmt.Errorf("publish: -instances and -groups must be at least 1, -members at least 3, -speed above 0, -fetches-per-heartbeat not negative")
	}
	mix, err := synth.ParseMix(*mixFlag)
	if err != nil {
		return fmt.Errorf("-mix: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pubs []*fleet.Publisher
	var wg sync.WaitGroup
	if !*dry {
		for i := range *instances {
			p, err := fleet.NewPublisher(fleet.PublisherConfig{
				Topic:      *topic,
				Instance:   instanceName(i),
				Client:     []kgo.Opt{kgo.SeedBrokers(strings.Split(*brokers, ",")...)},
				Partitions: int32(*partitions),
			}, zap.NewNop())
			if err != nil {
				return err
			}
			pubs = append(pubs, p)
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.Run(ctx)
			}()
		}
		if err := waitTopicReady(pubs, 30*time.Second); err != nil {
			return err
		}
	}
	now := time.Now()
	tr := synth.New(synth.Options{Seed: *seed, Groups: *groups, MaxMembers: *members, Mix: mix, Start: now.Add(-*warmup)})
	ft := &fleetTraffic{tr: tr, instances: *instances, fetchesPerHeartbeat: *fetches}
	// The warm-up: the groups' first joins, a burst no steady fleet sees.
	var first fleetExchange
	for {
		first = ft.next()
		if !first.x.CompletedAt().Before(now) {
			break
		}
	}
	src := &pacedSource{ft: ft, first: &first, t0: now, speed: *speed, span: *span, dry: *dry}
	sizes := newSizer(*instances)

	router := &fleetRouter{pubs: pubs, sizes: sizes}
	pl := pipeline.New(pipeline.Config{Decoded: []pipeline.DecodedConsumer{router}})
	start := time.Now()
	src.wall0 = start
	if err := pl.Run(ctx, src); err != nil {
		return err
	}
	wall := time.Since(start)
	cancel()
	wg.Wait()
	var published, dropped uint64
	for _, p := range pubs {
		p.Close(30 * time.Second)
		st := p.Stats()
		published += st.Published
		dropped += st.Dropped
	}
	flushed := time.Since(start)
	sizes.print(out, *span, wall, *groups, *instances)
	if *dry {
		return nil
	}
	fmt.Fprintf(out, "published %d exchange and gap records (and a marker a second each) from %d instances in %s (%s with the final flush); dropped %d exchanges\n",
		published, *instances, wall.Round(time.Millisecond), flushed.Round(time.Millisecond), dropped)
	if onDisk, n, err := topicBytes(*brokers, *topic); err != nil {
		fmt.Fprintf(out, "topic size: %v\n", err)
	} else {
		fmt.Fprintf(out, "topic %s on the broker: %d bytes in %d partitions (zstd batches): %.1f bytes per exchange, %.2f of the record bytes\n",
			*topic, onDisk, n, float64(onDisk)/float64(max(sizes.total.n, 1)), float64(onDisk)/float64(max(sizes.total.bytes, 1)))
	}
	return nil
}

// instanceName is the instance id of simulated instance i.
func instanceName(i int) string { return fmt.Sprintf("load-%02d", i) }

// waitTopicReady waits until the publishers have the topic (created by
// the first of them when missing).
func waitTopicReady(pubs []*fleet.Publisher, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, p := range pubs {
		for !p.Stats().TopicReady {
			if time.Now().After(deadline) {
				return fmt.Errorf("events topic not ready after %s", timeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// pacedSource is a pipeline source of fleetTraffic, paced: traffic time
// t0+d is due at wall time wall0 + d/speed, and an exchange is handed out
// when due (dry: at once). Its times are moved to when it is handed out,
// or when it was due if that is later, its latency kept: a real instance
// publishes what it observes as it observes it, so when this process
// cannot keep the pace, the traffic slows down rather than arriving late.
// It stops after span of traffic time.
type pacedSource struct {
	ft    *fleetTraffic
	first *fleetExchange
	t0    time.Time
	wall0 time.Time
	speed float64
	span  time.Duration
	dry   bool
}

func (s *pacedSource) Next() (*decode.Exchange, uint64, error) {
	var e fleetExchange
	if s.first != nil {
		e, s.first = *s.first, nil
	} else {
		e = s.ft.next()
	}
	x := e.x
	done := x.CompletedAt()
	d := done.Sub(s.t0)
	if d > s.span {
		return nil, 0, io.EOF
	}
	due := s.wall0.Add(time.Duration(float64(d) / s.speed))
	if !s.dry {
		if wait := time.Until(due); wait > time.Millisecond {
			time.Sleep(wait)
		}
		if now := time.Now(); now.After(due) {
			due = now
		}
	}
	shift := due.Sub(done)
	x.RequestAt = x.RequestAt.Add(shift)
	if !x.ResponseAt.IsZero() {
		x.ResponseAt = x.ResponseAt.Add(shift)
	}
	return x, 0, nil
}

// fleetRouter hands each decoded exchange to the publisher of the
// instance its client goes through, and counts its record's size.
type fleetRouter struct {
	pubs  []*fleet.Publisher
	sizes *sizer
}

func (r *fleetRouter) AddDecoded(d *decode.Decoded) {
	i := instanceOf(d.X.ClientAddr, len(r.sizes.seq))
	r.sizes.add(d, i)
	if r.pubs != nil {
		r.pubs[i].AddDecoded(d)
	}
}

// tally counts records and their bytes.
type tally struct{ n, bytes uint64 }

func (t *tally) add(b int) { t.n++; t.bytes += uint64(b) }

// sizer counts the records an exchange becomes (docs/fleet.md's format:
// key, value, headers; Kafka's own per-record overhead in a batch not
// included), by API, and the generations the groups went through.
type sizer struct {
	seq     []uint64 // per instance, for kproxy.seq's digits
	byAPI   map[int16]*tally
	total   tally
	rebal   tally // JoinGroup, SyncGroup, LeaveGroup, FindCoordinator, OffsetFetch
	gens    map[string]int32
	newGens uint64
	perGen  map[groupGen]*genBytes
}

func newSizer(instances int) *sizer {
	return &sizer{seq: make([]uint64, instances), byAPI: map[int16]*tally{}, gens: map[string]int32{}, perGen: map[groupGen]*genBytes{}}
}

func (s *sizer) add(d *decode.Decoded, inst int) {
	x := d.X
	id := instanceName(inst)
	key := id
	for _, e := range d.Events {
		if e.Group != "" {
			key = e.Group
			break
		}
	}
	for _, e := range d.Events {
		if e.JoinGroup != nil && e.JoinGroup.ErrorCode == 0 && e.JoinGroup.Generation > s.gens[e.Group] {
			s.gens[e.Group] = e.JoinGroup.Generation
			s.newGens++
		}
	}
	// Headers: kproxy.instance, kproxy.run (16 hex digits), kproxy.format
	// ("1"), kproxy.seq (decimal).
	headers := len(fleet.HeaderInstance) + len(id) + len(fleet.HeaderRun) + 16 +
		len(fleet.HeaderFormat) + len(fleet.FormatVersion) + len(fleet.HeaderSeq) + len(strconv.FormatUint(s.seq[inst], 10))
	s.seq[inst]++
	b := len(key) + journal.ExchangePayloadLen(x) + headers
	t := s.byAPI[x.APIKey]
	if t == nil {
		t = &tally{}
		s.byAPI[x.APIKey] = t
	}
	t.add(b)
	s.total.add(b)
	switch x.APIKey {
	case int16(kmsg.JoinGroup), int16(kmsg.SyncGroup), int16(kmsg.LeaveGroup), int16(kmsg.FindCoordinator), int16(kmsg.OffsetFetch):
		s.rebal.add(b)
	}
	for _, e := range d.Events {
		switch {
		case e.JoinGroup != nil && e.JoinGroup.ErrorCode == 0 && e.JoinGroup.Generation > 0:
			g := s.generation(e.Group, e.JoinGroup.Generation)
			g.joins++
			g.bytes += b
		case e.SyncGroup != nil && e.SyncGroup.Generation > 0:
			s.generation(e.Group, e.SyncGroup.Generation).bytes += b
		}
	}
}

// groupGen names a generation of a group.
type groupGen struct {
	group string
	gen   int32
}

// genBytes are the JoinGroup and SyncGroup record bytes of one generation,
// and its members (successful JoinGroup answers).
type genBytes struct{ joins, bytes int }

func (s *sizer) generation(group string, gen int32) *genBytes {
	k := groupGen{group, gen}
	g := s.perGen[k]
	if g == nil {
		g = &genBytes{}
		s.perGen[k] = g
	}
	return g
}

func (s *sizer) print(out io.Writer, span, wall time.Duration, groups, instances int) {
	sec := span.Seconds()
	fmt.Fprintf(out, "%s of traffic of %d groups through %d instances in %s of wall time: %d exchanges, %d record bytes (key, value, headers)\n",
		span, groups, instances, wall.Round(time.Millisecond), s.total.n, s.total.bytes)
	fmt.Fprintf(out, "fleet: %.0f records/s, %.2f MB/s of traffic time; per instance %.0f records/s, %.1f kB/s; per group %.2f records/s, %.0f B/s\n",
		float64(s.total.n)/sec, float64(s.total.bytes)/sec/1e6,
		float64(s.total.n)/sec/float64(instances), float64(s.total.bytes)/sec/1e3/float64(instances),
		float64(s.total.n)/sec/float64(groups), float64(s.total.bytes)/sec/float64(groups))
	if w := wall.Seconds(); w > 0 {
		fmt.Fprintf(out, "wall: %.0f records/s, %.2f MB/s (%.1fx real time)\n", float64(s.total.n)/w, float64(s.total.bytes)/w/1e6, sec/w)
	}
	keys := make([]int16, 0, len(s.byAPI))
	for k := range s.byAPI {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b int16) int { return int(int64(s.byAPI[b].bytes) - int64(s.byAPI[a].bytes)) })
	fmt.Fprintf(out, "%-16s %10s %8s %12s %8s\n", "api", "records", "share", "bytes", "mean")
	for _, k := range keys {
		t := s.byAPI[k]
		fmt.Fprintf(out, "%-16s %10d %7.1f%% %12d %8.0f\n", decode.APIName(k), t.n, 100*float64(t.bytes)/float64(max(s.total.bytes, 1)), t.bytes, float64(t.bytes)/float64(max(t.n, 1)))
	}
	fmt.Fprintf(out, "generations started: %d (%.2f per group per hour); JoinGroup, SyncGroup, LeaveGroup, FindCoordinator, OffsetFetch: %d records, %d bytes, %.0f bytes per generation\n",
		s.newGens, float64(s.newGens)/float64(groups)/span.Hours(), s.rebal.n, s.rebal.bytes, float64(s.rebal.bytes)/float64(max(s.newGens, 1)))
	// JoinGroup and SyncGroup bytes of a generation by its size (those
	// whose join the traffic shows).
	type bucket struct{ gens, members, bytes int }
	sizes := []struct {
		lo, hi int
		b      bucket
	}{{1, 1, bucket{}}, {2, 3, bucket{}}, {4, 12, bucket{}}, {13, 1 << 30, bucket{}}}
	for _, g := range s.perGen {
		for i := range sizes {
			if g.joins >= sizes[i].lo && g.joins <= sizes[i].hi {
				sizes[i].b.gens++
				sizes[i].b.members += g.joins
				sizes[i].b.bytes += g.bytes
			}
		}
	}
	for _, z := range sizes {
		if z.b.gens == 0 {
			continue
		}
		fmt.Fprintf(out, "generations of %d to %d members: %d, JoinGroup and SyncGroup %.0f bytes per generation, %.0f per member\n",
			z.lo, min(z.hi, 9999), z.b.gens, float64(z.b.bytes)/float64(z.b.gens), float64(z.b.bytes)/float64(z.b.members))
	}
}

// topicBytes is the topic's size on the broker's disks, and its partition
// count.
func topicBytes(brokers, topic string) (int64, int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dirs, err := kadm.NewClient(cl).DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("describe log dirs: %w", err)
	}
	var size int64
	n := 0
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic {
				size += p.Size
				n++
			}
		})
	})
	return size, n, nil
}
