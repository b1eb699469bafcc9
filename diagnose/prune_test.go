package diagnose

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/internal/unixnano"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestPruneForgetsSilentConnections: a fetch connection silent for longer
// than forgetAfter and a handover that never settled are forgotten as
// event time goes on, so that a long replay's memory stays flat.
func TestPruneForgetsSilentConnections(t *testing.T) {
	s := duplicateWindow()
	d := New(Config{}, timeline.Config{})
	for _, it := range s.ordered() {
		feed(d, it)
	}
	if len(d.conns) == 0 || len(d.byClient) == 0 {
		t.Fatalf("%d connections, %d indexed by client after the fetches; want some", len(d.conns), len(d.byClient))
	}
	d.groups["g"].handovers = append(d.groups["g"].handovers, &handover{at: sec(10)})
	d.Advance(sec(30 + 11*60))
	if len(d.conns) != 0 || len(d.byClient) != 0 {
		t.Errorf("%d connections, %d indexed by client 11 minutes after their last fetch; want 0", len(d.conns), len(d.byClient))
	}
	for _, h := range d.groups["g"].handovers {
		if !h.resumed {
			t.Errorf("an unsettled handover of %s is still remembered", h.at)
		}
	}
}

// TestForget: with Config.Forget, as serve sets it, the findings and the
// groups older than that are forgotten as event time goes on, and Live
// forgets what it told of them (and tells them no more), so that the
// diagnosis does not grow with the proxy's uptime; without it, a
// journal's diagnosis keeps everything.
func TestForget(t *testing.T) {
	const forget = 10 * time.Minute
	for _, c := range []struct {
		name   string
		forget time.Duration
		keep   bool
	}{
		{"kept without Forget", 0, true},
		{"forgotten with Forget", forget, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var told []string
			l := NewLive(timeline.Config{}, timeline.Retention{}, Config{Forget: c.forget},
				func(f Finding) { told = append(told, f.ID) }, nil)
			feedLive(l, sessionTimeout())
			l.Close(sec(50))
			if len(told) == 0 || len(l.Findings()) == 0 || l.told.len() == 0 {
				t.Fatalf("told %v, %d findings, %d remembered; want the session timeout's", told, len(l.Findings()), l.told.len())
			}
			n := len(told)
			later := sec(50).Add(forget + 2*time.Minute)
			l.AddDecoded(&decode.Decoded{Events: []decode.Event{{At: later}}}) // a Metadata-less, group-less event: only the clock moves
			l.Advance(later.Add(time.Second))
			warnings, groups, remembered := len(l.d.warnings), len(l.d.groups), l.told.len()
			pending := len(l.dirty) + len(l.d.changed)
			if pending != 0 {
				t.Errorf("%d groups still marked changed after publishing; want 0", pending)
			}
			if c.keep {
				if warnings == 0 || groups == 0 || remembered != len(told) {
					t.Errorf("%d warnings, %d groups, %d told remembered; want everything kept (%d told)", warnings, groups, remembered, len(told))
				}
				return
			}
			if warnings != 0 || groups != 0 || remembered != 0 {
				t.Errorf("%d warnings, %d groups, %d told remembered %s later; want none", warnings, groups, remembered, forget+2*time.Minute)
			}
			if len(told) != n {
				t.Errorf("told %v after forgetting; want nothing more than %v", told[n:], told[:n])
			}
		})
	}
}

// TestForgetQuietMembers: a group that lives for hours while its members
// come and go, each with a new member id from a new address (one of them a
// static member restarting), remembers with Config.Forget only the
// members active within it, and what they hold; without Forget, every one.
func TestForgetQuietMembers(t *testing.T) {
	const forget = time.Hour
	const runs, every = 18, 600.0 // a new member every 10 minutes, for 3 hours
	for _, c := range []struct {
		name   string
		forget time.Duration
		want   int // members remembered at the end
		addrs  int // addresses remembered at the end
	}{
		{"kept without Forget", 0, runs, runs},
		// Those active in the last hour; the addresses of the two not
		// gone for forgetAfter yet: no handover waits for the others.
		{"forgotten with Forget", forget, 7, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newScript("g")
			for i := range runs {
				at := float64(i) * every
				cl := client{id: "consumer", addr: fmt.Sprintf("10.0.0.%d:4000", i)}
				id := fmt.Sprintf("m-%d", i)
				j := s.jg(id, int32(i+1), id, id)
				if i%2 == 0 {
					j.InstanceID = "static-0"
				}
				s.join(cl, at, at+0.1, j)
				s.sync(cl, at+0.2, at+0.3, id, int32(i+1), parts("t", 0), map[string][]decode.TopicPartitions{id: parts("t", 0)})
				s.hbs(cl, id, int32(i+1), at+3, at+every-1, 3)
				s.leave(cl, at+every-0.5, at+every-0.4, id, "rolling restart")
			}
			d := New(Config{Forget: c.forget}, timeline.Config{})
			for _, it := range s.ordered() {
				feed(d, it)
			}
			g := d.groups["g"]
			if g == nil {
				t.Fatal("the group was forgotten; want it kept, it was active to the end")
			}
			if len(g.members) != c.want || len(g.byAddr) != c.addrs {
				t.Errorf("%d members, %d addresses remembered; want %d and %d", len(g.members), len(g.byAddr), c.want, c.addrs)
			}
			for addr, id := range g.byAddr {
				if m := g.members[id]; m == nil || m.act == nil {
					t.Errorf("address %s remembered for %s, forgotten or gone", addr, id)
				}
			}
			active := 0 // records with what the next requests are read against
			for _, m := range g.members {
				if m.act != nil {
					active++
				}
			}
			if active != c.addrs {
				t.Errorf("%d records keep their activity; want %d (a gone member's goes)", active, c.addrs)
			}
			if is := g.instances["static-0"]; is == nil || len(is.members) > (c.want+1)/2 {
				t.Errorf("static-0's history %+v; want at most its %d turns among the members remembered", is, (c.want+1)/2)
			}
			for _, m := range g.members {
				if c.forget > 0 && unixnano.Time(m.seen).Before(sec(runs*every).Add(-forget-pruneEvery)) {
					t.Errorf("member %s, last active at %s, is remembered", m.id, unixnano.Time(m.seen))
				}
			}
		})
	}
}

// TestBareConnectionsForgottenSooner: a connection that announced its
// software and sent no group request is forgotten bareAfter after its
// latest request; one a member joined over keeps what it said while it is
// busy, and names the member with it.
func TestBareConnectionsForgottenSooner(t *testing.T) {
	s := newScript("g")
	s.software(cA, 0, "kgo", "v1.22.3")
	s.software(cB, 0, "kgo", "v1.22.3")
	s.join(cA, 0.1, 0.2, s.jg("A-1", 1, "A-1", "A-1"))
	d := New(Config{}, timeline.Config{})
	for _, it := range s.ordered() {
		feed(d, it)
	}
	bare := func() (n int) {
		for _, c := range d.idents {
			if !c.used {
				n++
			}
		}
		return n
	}
	if bare() != 1 || !d.idents[cA.addr].used {
		t.Fatalf("%d bare connections, %v kept; want %s bare and %s used", bare(), d.idents, cB.addr, cA.addr)
	}
	d.Advance(sec(0.2).Add(bareAfter + pruneEvery + time.Second))
	if bare() != 0 {
		t.Errorf("%d bare connections %s after their request; want 0", bare(), bareAfter+pruneEvery)
	}
	c, ok := d.identOf(cA.addr)
	if !ok || c.software.Name != "kgo" {
		t.Errorf("the joined connection says %+v (kept %v); want its software kgo", c, ok)
	}
	if m := d.groups["g"].members["A-1"]; m == nil || m.who().software.Name != "kgo" {
		t.Errorf("member A-1 is %+v; want its software kgo", m)
	}
}

// TestForgetGoneMembers: in a group whose members come and go, each with
// a new member id from a new connection, a member gone for forgetAfter is
// forgotten as soon as nothing kept names it, long before Config.Forget:
// the members of the generations the timeline keeps keep their records
// and leaves (their departures are read again at every recompute), and
// a finding kept for a member long gone still names it with what its
// record said, its connection being forgotten.
func TestForgetGoneMembers(t *testing.T) {
	const runs, every = 30, 600.0
	s := churn(runs, every)
	l := NewLive(timeline.Config{}, timeline.Retention{Generations: 3, MaxAge: 24 * time.Hour}, Config{Forget: 24 * time.Hour}, nil, nil)
	feedLive(l, s)
	end := sec(runs * every).Add(forgetAfter + pruneEvery)
	l.Close(end)
	g := l.d.groups["g"]
	views := l.tl.Views([]string{"g"})
	if g == nil || len(views) != 1 {
		t.Fatalf("group state %v, %d views; want the group kept", g, len(views))
	}
	kept := map[string]bool{}
	viewNames(&views[0], kept)
	for _, gen := range views[0].Generations {
		for _, d := range gen.Departed {
			if m := g.members[d.MemberID]; m == nil || len(m.leaves) == 0 {
				t.Errorf("member %s, departed in kept generation %d, is remembered as %+v; want its record and leaves", d.MemberID, gen.Generation, m)
			}
		}
	}
	for id := range g.members {
		if !kept[id] && id != "m-0" {
			t.Errorf("member %s is remembered; no kept generation nor finding names it", id)
		}
	}
	if g.members["m-0"] == nil {
		t.Error("member m-0 is forgotten; its timeouts_misordered finding is kept and names it")
	}
	if len(g.members) > 6 || len(g.joinedFrom) > 6 || len(g.byAddr) > 6 {
		t.Errorf("%d members, %d join addresses, %d addresses remembered of %d; want only those still named", len(g.members), len(g.joinedFrom), len(g.byAddr), runs)
	}
	if _, ok := l.d.identOf("10.0.0.0:4000"); ok {
		t.Fatal("m-0's connection is still remembered; want it forgotten, so that the finding's name comes from the record")
	}
	found := false
	for _, f := range l.GroupFindings("g") {
		if f.Kind == TimeoutsMisordered {
			found = true
			if len(f.Members) != 1 || f.Members[0].MemberID != "m-0" || f.Members[0].SoftwareName != "kgo" {
				t.Errorf("timeouts_misordered names %+v; want m-0 running kgo", f.Members)
			}
		}
	}
	if !found {
		t.Errorf("findings %v; want m-0's timeouts_misordered", l.GroupFindings("g"))
	}
}

// churn is a group whose members come and go: a new member every every
// seconds, runs times, each with a new member id from a new connection
// that announced its software, joining a generation of its own, leaving
// before the next; the first one's timeouts are misordered.
func churn(runs int, every float64) *script {
	s := newScript("g")
	for i := range runs {
		at := float64(i) * every
		cl := client{id: "consumer", addr: fmt.Sprintf("10.0.0.%d:4000", i)}
		id := fmt.Sprintf("m-%d", i)
		s.software(cl, at, "kgo", "v1.22.3")
		j := s.jg(id, int32(i+1), id, id)
		if i == 0 {
			j.RebalanceTimeout = j.SessionTimeout // timeouts_misordered, kept for Forget
		}
		s.join(cl, at+0.1, at+0.2, j)
		s.sync(cl, at+0.3, at+0.4, id, int32(i+1), parts("t", 0), map[string][]decode.TopicPartitions{id: parts("t", 0)})
		s.hbs(cl, id, int32(i+1), at+3, at+every-1, 3)
		s.leave(cl, at+every-0.5, at+every-0.4, id, "rolling restart")
	}
	return s
}

// TestForgetGoneTellsTheSame: forgetting gone members early changes
// nothing told or found. Each scenario, and a group whose members churn,
// runs through serve's diagnosis with a timeline keeping one generation,
// followed by 40 minutes of quiet, once with Config.Forget (members
// forgotten once gone and unnamed) and once without (nothing forgotten):
// the findings told and the findings at the end are the same.
func TestForgetGoneTellsTheSame(t *testing.T) {
	cases := []struct {
		name   string
		cfg    Config
		script func() *script
	}{
		{"healthy", Config{}, healthy},
		{"static_restart", Config{}, staticRestart},
		{"poll_timeout_left", Config{}, pollLeft},
		{"poll_timeout_deadline", Config{}, pollDeadline},
		{"session_timeout", Config{}, sessionTimeout},
		{"rolling_restart", Config{}, rollingRestart},
		{"static_duplicate", Config{}, staticDuplicate},
		{"smells", Config{}, smells},
		{"commits", Config{}, commits},
		{"txn_commits", Config{}, txnCommits},
		{"partitions", Config{EagerLargeGroup: 3, UnownedAfter: 5 * time.Second}, partitionsScript},
		{"duplicate_window", Config{}, duplicateWindow},
		{"session_timeout_848", Config{}, sessionTimeout848},
		{"fencing_loop_848", Config{}, fencingLoop848},
		{"static_restart_848", Config{}, staticRestart848},
		{"churn", Config{}, func() *script { return churn(8, 600) }},
	}
	dropped := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(forget time.Duration) (told []string, found []byte, records int) {
				cfg := c.cfg
				cfg.Forget = forget
				l := NewLive(timeline.Config{}, timeline.Retention{Generations: 1}, cfg, func(f Finding) { told = append(told, f.ID) }, nil)
				s := c.script()
				feedLive(l, s)
				end := s.ordered()[len(s.items)-1].when()
				for m := range 40 {
					l.Advance(end.Add(time.Duration(m+1) * time.Minute))
				}
				l.Close(end.Add(41 * time.Minute))
				var b bytes.Buffer
				if err := WriteJSON(&b, l.Findings()); err != nil {
					t.Fatal(err)
				}
				for _, g := range l.d.groups {
					records += len(g.members)
				}
				return told, b.Bytes(), records
			}
			toldAll, foundAll, kept := run(0)
			told, found, fewer := run(24 * time.Hour)
			if !slices.Equal(told, toldAll) {
				t.Errorf("told %v forgetting gone members; %v keeping them", told, toldAll)
			}
			if !bytes.Equal(found, foundAll) {
				t.Errorf("found, forgetting gone members:\n%s\nkeeping them:\n%s", found, foundAll)
			}
			dropped += kept - fewer
		})
	}
	if dropped == 0 {
		t.Error("no member was forgotten early in any scenario; want some, or this test shows nothing")
	}
}

// TestOldJoinsForgottenTellsTheSame: the joins older than forgetAfter
// that follow no kept leave from their connection are forgotten, and
// nothing told or found changes. B leaves without a reason and without
// fetching for the rebalance timeout three times in 70 minutes, each time
// joining again at once over its connection (a poll timeout inferred
// from the wire), in a group that rebalances every 2 minutes: a rejoin
// is looked up among joins older than forgetAfter. The diagnosis runs
// once with Config.Forget (old joins forgotten) and once without (every
// join kept, up to maxLeaves per connection).
func TestOldJoinsForgottenTellsTheSame(t *testing.T) {
	run := func(forget time.Duration, gens, leaveEvery int32, every float64) (told []string, found []byte, l *Live) {
		l = NewLive(timeline.Config{}, timeline.Retention{Generations: 100, MaxAge: 24 * time.Hour}, Config{Forget: forget},
			func(f Finding) { told = append(told, f.ID) }, nil)
		feedLive(l, longPollLoop(gens, leaveEvery, every))
		l.Close(sec(float64(gens) * every))
		var b bytes.Buffer
		if err := WriteJSON(&b, l.Findings()); err != nil {
			t.Fatal(err)
		}
		return told, b.Bytes(), l
	}
	toldAll, foundAll, _ := run(0, 35, 10, 120)
	told, found, l := run(24*time.Hour, 35, 10, 120)
	if !slices.Equal(told, toldAll) {
		t.Errorf("told %v forgetting old joins; %v keeping them", told, toldAll)
	}
	if !bytes.Equal(found, foundAll) {
		t.Errorf("found, forgetting old joins:\n%s\nkeeping them:\n%s", found, foundAll)
	}
	evictions := 0
	for _, f := range l.Findings() {
		if f.Kind == PollTimeoutEviction {
			evictions++
		}
	}
	if evictions != 3 {
		t.Errorf("%d poll_timeout_eviction findings; want B's 3", evictions)
	}
	// Without a leave, the joins of the last 10 minutes are kept.
	_, _, all := run(0, 25, 100, 60)
	_, _, l = run(24*time.Hour, 25, 100, 60)
	kept, keptAll := len(l.d.groups["g"].joinedFrom[cB.addr]), len(all.d.groups["g"].joinedFrom[cB.addr])
	if kept >= keptAll || kept == 0 {
		t.Errorf("%d joins kept from B's connection forgetting old ones, %d keeping them; want fewer, not none", kept, keptAll)
	}
}

// longPollLoop is A and B rebalancing every every seconds into gens
// generations, B's member leaving without a reason at the end of every
// leaveEvery-th generation after 35 s without a Fetch, and its next
// member joining at once over the same connection.
func longPollLoop(gens, leaveEvery int32, every float64) *script {
	s := newScript("g")
	fetchA := client{"consumer-g-1", "10.0.0.1:4101"}
	fetchB := client{"consumer-g-2", "10.0.0.2:4102"}
	b := mB
	for gen := int32(1); gen <= gens; gen++ {
		at := float64(gen-1) * every
		s.round(at, gen, []mc{mA, b}, map[string][]int32{"A-1": {0, 1}, b.id: {2}})
		s.hbs(cA, "A-1", gen, at+3, at+every, 3)
		for f := at + 1; f < at+every; f += 5 {
			s.fetch(fetchA, f, "t", map[int32]int64{0: int64(f), 1: int64(f)})
			if gen%leaveEvery != 0 || f < at+every-40 {
				s.fetch(fetchB, f, "t", map[int32]int64{2: int64(f)})
			}
		}
		if gen%leaveEvery != 0 {
			s.hbs(cB, b.id, gen, at+3, at+every, 3)
			continue
		}
		s.hbs(cB, b.id, gen, at+3, at+every-5, 3)
		s.leave(cB, at+every-0.5, at+every-0.49, b.id, "")
		b = mc{fmt.Sprintf("B-%d", gen/leaveEvery+1), cB}
	}
	return s
}

// TestShrunk: forget drops a map it emptied and copies one it more than
// halved, so that neither keeps the room of its largest size; a map that
// lost fewer keeps its own.
func TestShrunk(t *testing.T) {
	full := map[string]int{"a": 1, "b": 2, "c": 3}
	for _, c := range []struct {
		name    string
		m       map[string]int
		dropped int
		want    map[string]int
		copied  bool
	}{
		{"emptied", map[string]int{}, 3, nil, false},
		{"never filled", nil, 0, nil, false},
		{"more than halved", full, 4, full, true},
		{"halved", full, 3, full, false},
		{"untouched", full, 0, full, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := shrunk(c.m, c.dropped)
			if (got == nil) != (c.want == nil) || !maps.Equal(got, c.want) {
				t.Fatalf("shrunk(%v, %d) = %v; want %v", c.m, c.dropped, got, c.want)
			}
			if c.want != nil {
				if same := reflect.ValueOf(got).UnsafePointer() == reflect.ValueOf(c.m).UnsafePointer(); same == c.copied {
					t.Errorf("shrunk(%v, %d) is the same map: %v; want a copy: %v", c.m, c.dropped, same, c.copied)
				}
			}
		})
	}
}

// TestEndedGroupDropsItsMaps: once forget has emptied a group's join
// addresses (its members gone 10 minutes, with no leave kept to look a
// rejoin up after), the group keeps no map of them.
func TestEndedGroupDropsItsMaps(t *testing.T) {
	s := newScript("g")
	cl := client{id: "consumer", addr: "10.0.0.1:4000"}
	s.join(cl, 0, 0.1, s.jg("m-1", 1, "m-1", "m-1"))
	s.sync(cl, 0.2, 0.3, "m-1", 1, parts("t", 0), map[string][]decode.TopicPartitions{"m-1": parts("t", 0)})
	s.hbs(cl, "m-1", 1, 3, 60, 3)
	d := New(Config{Forget: 24 * time.Hour}, timeline.Config{})
	for _, it := range s.ordered() {
		feed(d, it)
	}
	g := d.groups["g"]
	if g == nil || len(g.joinedFrom) != 1 {
		t.Fatalf("group state %+v; want m-1's join kept", g)
	}
	d.Advance(sec(60).Add(2 * forgetAfter))
	if g.joinedFrom != nil {
		t.Errorf("join addresses %v; want none kept, and no map", g.joinedFrom)
	}
}
