package diagnose

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/kproxy-dev/kproxy/timeline"
)

// A rollout is a run of restarts: a member goes (LeaveGroup, or its
// session expires) and a new member from the same kind of client (same
// group.instance.id, or a client id that differs only in its numbers)
// comes soon after, over a new connection (a member that joins again over
// the connection it left from is the same process: no restart). Restarts no farther apart than Config.RolloutGap form
// one episode.

// restart is one instance going and coming back.
type restart struct {
	gone, back       string // member ids
	goneAt, backAt   time.Time
	how              string // how the old member departed; "static" for a rejoin without rebalance
	pattern, hostOld string
}

var digits = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9]+`)

// clientPattern is a client id with its numbers and UUIDs replaced by
// "*": consumer-orders-3 and consumer-orders-7 are one kind of client.
func clientPattern(clientID string) string { return digits.ReplaceAllString(clientID, "*") }

// restarts pairs the group's departures with later joins of the same kind
// of client, and lists the static restarts that caused no rebalance.
func (e *Engine) restarts(g *groupState, gr *timeline.GroupView) []restart {
	type join struct {
		id, instance, pattern, addr string
		at                          time.Time
	}
	var joins []join
	var out []restart
	// prev and cur are the members of the previous generation and of
	// this one, two sets reused from one generation to the next.
	prev, cur := map[string]bool{}, map[string]bool{}
	for i, gen := range gr.Generations {
		clear(cur)
		for _, m := range gen.Members {
			cur[m.MemberID] = true
			if m.Status == "joined" || m.Status == "replaced" || (i > 0 && !prev[m.MemberID] && m.Status != "unobserved") {
				info := e.info(g, m.MemberID)
				joins = append(joins, join{m.MemberID, m.InstanceID, clientPattern(info.ClientID), info.ClientAddr, m.Joined})
			}
		}
		for _, rj := range gen.Rejoins {
			if rj.Replaces != "" {
				out = append(out, restart{gone: rj.Replaces, back: rj.MemberID, goneAt: rj.At, backAt: rj.At,
					how: "static", pattern: clientPattern(rj.ClientID), hostOld: host(rj.ClientAddr)})
			}
		}
		prev, cur = cur, prev
	}
	used := map[string]bool{}
	for _, gen := range gr.Generations {
		for _, d := range gen.Departed {
			at := d.At
			old := e.info(g, d.MemberID)
			p := clientPattern(old.ClientID)
			for _, j := range joins {
				if used[j.id] || j.at.Before(at) || j.at.Sub(at) > e.cfg.RolloutGap {
					continue
				}
				if (d.InstanceID != "" && d.InstanceID == j.instance) || (old.ClientID != "" && p == j.pattern) {
					used[j.id] = true
					if j.addr != "" && j.addr == old.ClientAddr {
						// The same connection joined again: the process
						// never stopped (a poll timeout, a session lost
						// to a pause), which is no restart.
						break
					}
					out = append(out, restart{gone: d.MemberID, back: j.id, goneAt: at, backAt: j.at, how: d.How,
						pattern: p, hostOld: host(old.ClientAddr)})
					break
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b restart) int { return a.goneAt.Compare(b.goneAt) })
	return out
}

// rollouts makes one rolling_restart finding per episode of at least two
// restarts that cost rebalances.
func (e *Engine) rollouts(g *groupState, gr *timeline.GroupView) []Finding {
	rs := e.restarts(g, gr)
	var out []Finding
	for i := 0; i < len(rs); {
		j := i + 1
		end := rs[i].backAt
		for j < len(rs) && rs[j].goneAt.Sub(end) <= e.cfg.RolloutGap {
			end = later(end, rs[j].backAt)
			j++
		}
		if f, ok := e.rollout(g, gr, rs[i:j]); ok {
			out = append(out, f)
		}
		i = j
	}
	return out
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// rollout is the finding of one episode, if it cost a rebalance.
func (e *Engine) rollout(g *groupState, gr *timeline.GroupView, rs []restart) (Finding, bool) {
	if len(rs) < 2 {
		return Finding{}, false
	}
	from, to := rs[0].goneAt, rs[0].backAt
	var longest time.Duration
	var ids []string
	static := 0
	for _, r := range rs {
		to = later(to, r.backAt)
		longest = max(longest, r.backAt.Sub(r.goneAt))
		ids = append(ids, r.gone, r.back)
		if r.how == "static" {
			static++
		}
	}
	rebalances, stw := 0, 0.0
	var gens []int32
	for _, gen := range gr.Generations {
		st := gen.Started
		if st.IsZero() || st.Before(from) || st.After(to) {
			continue
		}
		rebalances++
		gens = append(gens, gen.Generation)
		if gen.StopTheWorld >= 0 {
			stw += ms(gen.StopTheWorld)
		}
	}
	if rebalances == 0 {
		return Finding{}, false // static members back within their session: nothing to fix
	}
	// With static membership, an instance back within its session timeout
	// keeps its partitions: suggest a session timeout half again as long
	// as the slowest restart, in whole 5 s, at least 10 s.
	x := time.Duration(math.Ceil(longest.Seconds()*1.5/5)*5) * time.Second
	x = max(x, 10*time.Second)
	f := newFinding(RollingRestart, g.id, Warning, from, "")
	f.Members = e.infos(g, ids...)
	f.Evidence["instances"] = len(rs)
	f.Evidence["staticRestarts"] = static
	f.Evidence["rebalances"] = rebalances
	f.Evidence["generations"] = gens
	f.Evidence["stopTheWorldMs"] = stw
	f.Evidence["from"] = stamp(from)
	f.Evidence["to"] = stamp(to)
	f.Evidence["longestRestartMs"] = ms(longest)
	f.Evidence["suggestedSessionTimeoutMs"] = ms(x)
	f.Evidence["expectedRebalances"] = 0
	var patterns, hosts, software []string
	for _, r := range rs {
		patterns = append(patterns, r.pattern)
		hosts = append(hosts, r.hostOld)
		for _, id := range []string{r.gone, r.back} {
			if m := g.members[id]; m != nil && m.who().software.Name != "" {
				sw := m.who().software
				software = append(software, sw.Name+" "+sw.Version)
			}
		}
	}
	f.Evidence["clientIdPatterns"] = uniq(patterns)
	f.Evidence["hosts"] = uniq(hosts)
	f.Evidence["software"] = uniq(software)
	f.Explanation = fmt.Sprintf("this rollout of %d instances cost %d rebalances and %.1f s of stop-the-world (%s to %s; the slowest instance was back after %.1f s). With static membership (group.instance.id) and session.timeout.ms ≥ %d, about 0: a static member back within its session timeout keeps its partitions and the group does not rebalance",
		len(rs), rebalances, stw/1000, stamp(from), stamp(to), longest.Seconds(), x.Milliseconds())
	f.Suggestion = advice(RollingRestart)
	return f, true
}

// uniq is ss sorted without repeats or empty strings, never nil.
func uniq(ss []string) []string {
	out := []string{}
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
