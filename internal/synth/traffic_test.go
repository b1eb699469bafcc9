package synth

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestTraffic checks, per mix, that every exchange decodes, that the
// exchanges come in completion order, that the same seed gives the same
// traffic, and that the mix is what its documentation says.
func TestTraffic(t *testing.T) {
	for _, c := range []struct {
		mix Mix
		n   int
		// share bounds, in percent of exchanges
		heartbeatMin, fetchPathMin, rebalanceMax float64
	}{
		{mix: Realistic, n: 60000, heartbeatMin: 45, fetchPathMin: 8, rebalanceMax: 6},
		{mix: RebalanceHeavy, n: 20000, heartbeatMin: 30, fetchPathMin: 0, rebalanceMax: 30},
	} {
		t.Run(c.mix.String(), func(t *testing.T) {
			opts := Options{Seed: 7, Groups: 40, Mix: c.mix}
			a, b := New(opts), New(opts)
			dec := decode.NewDecoder()
			counts := map[int16]int{}
			var last *decode.Exchange
			for i := range c.n {
				x, y := a.Next(), b.Next()
				if x.ConnID != y.ConnID || !x.RequestAt.Equal(y.RequestAt) || !bytes.Equal(x.Request, y.Request) || !bytes.Equal(x.Response, y.Response) {
					t.Fatalf("exchange %d differs between two runs with the same seed", i)
				}
				if _, err := dec.Decode(x); err != nil {
					t.Fatalf("exchange %d (%s v%d) does not decode: %v", i, decode.APIName(x.APIKey), x.APIVersion, err)
				}
				if last != nil && x.CompletedAt().Before(last.CompletedAt()) {
					t.Fatalf("exchange %d completed at %s, before the previous one (%s)", i, x.CompletedAt(), last.CompletedAt())
				}
				last = x
				counts[x.APIKey]++
			}
			share := func(keys ...int16) float64 {
				n := 0
				for _, k := range keys {
					n += counts[k]
				}
				return 100 * float64(n) / float64(c.n)
			}
			if hb := share(12); hb < c.heartbeatMin {
				t.Errorf("heartbeats are %.1f%% of exchanges, want at least %.0f%%", hb, c.heartbeatMin)
			}
			if fp := share(3, 18); fp < c.fetchPathMin {
				t.Errorf("ApiVersions and Metadata are %.1f%%, want at least %.0f%%", fp, c.fetchPathMin)
			}
			if rb := share(11, 13, 14); rb > c.rebalanceMax || rb == 0 {
				t.Errorf("JoinGroup, SyncGroup and LeaveGroup are %.1f%%, want some and at most %.0f%%", rb, c.rebalanceMax)
			}
		})
	}
}

func TestParseMix(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    Mix
		wantErr bool
	}{{"realistic", Realistic, false}, {"rebalance-heavy", RebalanceHeavy, false}, {"heavy", 0, true}} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseMix(c.in)
			if (err != nil) != c.wantErr || got != c.want {
				t.Errorf("ParseMix(%q) = %v, %v", c.in, got, err)
			}
		})
	}
}

// until returns the exchanges of opts completed within span of the first
// one.
func until(opts Options, span time.Duration) []*decode.Exchange {
	tr := New(opts)
	var xs []*decode.Exchange
	for {
		x := tr.Next()
		if len(xs) > 0 && x.CompletedAt().Sub(xs[0].CompletedAt()) > span {
			return xs
		}
		xs = append(xs, x)
	}
}

// TestHeartbeat checks that a slower heartbeat (Options.Heartbeat) makes
// heartbeats and steady commits that much rarer, asks for session and
// rebalance timeouts of 15 and 100 heartbeats, and leaves the rates of
// rebalances and of the fetch path's traffic as they are, over the same
// span of traffic time.
func TestHeartbeat(t *testing.T) {
	const span = 90 * time.Minute
	count := func(hb time.Duration) (map[int16]int, time.Duration) {
		xs := until(Options{Seed: 4, Groups: 20, MaxMembers: 16, Heartbeat: hb}, span)
		counts := map[int16]int{}
		last := map[uint64]time.Time{} // a member's latest heartbeat, by connection
		var gaps []time.Duration
		for _, x := range xs {
			counts[x.APIKey]++
			switch x.APIKey {
			case 11: // JoinGroup
				req := kmsg.NewPtrJoinGroupRequest()
				req.SetVersion(x.APIVersion)
				if err := req.ReadFrom(requestBody(t, x)); err != nil {
					t.Fatal(err)
				}
				if s, r := time.Duration(req.SessionTimeoutMillis)*time.Millisecond, time.Duration(req.RebalanceTimeoutMillis)*time.Millisecond; s != 15*hb || r != 100*hb {
					t.Fatalf("heartbeat %s: JoinGroup asks for session %s and rebalance %s, want %s and %s", hb, s, r, 15*hb, 100*hb)
				}
			case 12: // Heartbeat
				if at, ok := last[x.ConnID]; ok {
					gaps = append(gaps, x.RequestAt.Sub(at))
				}
				last[x.ConnID] = x.RequestAt
			}
		}
		slices.Sort(gaps)
		return counts, gaps[len(gaps)/2]
	}
	fast, fastGap := count(3 * time.Second)
	slow, slowGap := count(30 * time.Second)
	for _, c := range []struct {
		what   string
		gap    time.Duration
		period time.Duration
	}{{"3 s", fastGap, 3 * time.Second}, {"30 s", slowGap, 30 * time.Second}} {
		if c.gap < c.period || c.gap > c.period+300*time.Millisecond {
			t.Errorf("heartbeat %s: median interval between a member's heartbeats %s", c.what, c.gap)
		}
	}
	ratio := func(keys ...int16) float64 {
		var f, s int
		for _, k := range keys {
			f, s = f+fast[k], s+slow[k]
		}
		return float64(f) / float64(max(s, 1))
	}
	for _, c := range []struct {
		what   string
		keys   []int16
		lo, hi float64
	}{
		{"Heartbeat", []int16{12}, 8, 11},
		{"OffsetCommit", []int16{8}, 5, 11}, // commits during revocation do not change
		{"JoinGroup, SyncGroup and LeaveGroup", []int16{11, 13, 14}, 0.8, 1.25},
		{"ApiVersions and Metadata", []int16{3, 18}, 0.9, 1.1},
	} {
		if r := ratio(c.keys...); r < c.lo || r > c.hi {
			t.Errorf("%s: %.2f times as many at 3 s as at 30 s, want %.2f to %.2f (3 s: %v, 30 s: %v)", c.what, r, c.lo, c.hi, fast, slow)
		}
	}
}

// requestBody is x's request past its header (version 1 or 2).
func requestBody(t *testing.T, x *decode.Exchange) []byte {
	t.Helper()
	h, err := decode.ParseRequestHeader(x.Request)
	if err != nil {
		t.Fatal(err)
	}
	return x.Request[h.Len:]
}

// TestJobs checks the short-lived groups (Options.Jobs): each slot runs
// one group at a time, under a new id each run; a run lasts 5 to 60
// minutes (and its last rebalance), ends with every member leaving, and
// the next starts after it.
func TestJobs(t *testing.T) {
	const slots = 4
	xs := until(Options{Seed: 5, Groups: 3, Jobs: slots}, 4*time.Hour)
	dec := decode.NewDecoder()
	type run struct {
		first, last time.Time
		members     map[string]bool // joined
		left        map[string]bool // LeaveGroup sent
		leftAt      time.Time
	}
	runs := map[string]*run{}
	for _, x := range xs {
		evs, err := dec.Decode(x)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if !strings.HasPrefix(ev.Group, "job-") {
				continue
			}
			r := runs[ev.Group]
			if r == nil {
				r = &run{first: ev.At, members: map[string]bool{}, left: map[string]bool{}}
				runs[ev.Group] = r
			}
			if len(r.left) > 0 && len(r.left) == len(r.members) {
				t.Fatalf("%s: %s at %s, after every member left", ev.Group, decode.APIName(ev.APIKey), ev.At)
			}
			r.last = ev.At
			if ev.SyncGroup != nil {
				r.members[ev.SyncGroup.MemberID] = true
			}
			if ev.LeaveGroup != nil {
				for _, m := range ev.LeaveGroup.Members {
					r.left[m.MemberID] = true
				}
				r.leftAt = ev.At
			}
		}
	}
	bySlot := map[string][]string{}
	for id := range runs {
		slot, _, _ := strings.Cut(strings.TrimPrefix(id, "job-"), "-run-")
		bySlot[slot] = append(bySlot[slot], id)
	}
	if len(bySlot) != slots {
		t.Fatalf("job slots seen: %v, want %d", slices.Sorted(maps.Keys(bySlot)), slots)
	}
	for slot, ids := range bySlot {
		if len(ids) < 3 {
			t.Errorf("slot %s ran %v in 4 hours, want at least 3 runs", slot, ids)
		}
		slices.SortFunc(ids, func(a, b string) int { return runs[a].first.Compare(runs[b].first) })
		for i, id := range ids {
			r := runs[id]
			if want := fmt.Sprintf("job-%s-run-%d", slot, i); id != want {
				t.Errorf("slot %s: run %d is %s, want %s", slot, i, id, want)
			}
			if i > 0 && !r.first.After(runs[ids[i-1]].last) {
				t.Errorf("%s began at %s, before %s ended (%s)", id, r.first, ids[i-1], runs[ids[i-1]].last)
			}
			if i == len(ids)-1 {
				continue // may still run
			}
			if len(r.members) == 0 || len(r.left) != len(r.members) {
				t.Errorf("%s: members %v, left %v: want every member to leave", id, r.members, r.left)
			}
			if d := r.leftAt.Sub(r.first); d < 5*time.Minute || d > 61*time.Minute {
				t.Errorf("%s ran %s, want 5 to 60 minutes", id, d)
			}
		}
	}
}
