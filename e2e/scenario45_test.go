//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScenario45 is scenario 1's story told by a fleet (issue 14):
// kafka-python A dials kproxy instance kp-1 and B instance kp-2, each
// publishing what it observes to the events topic on the broker; a third
// instance, kp-view, with --fleet-topic and no client of its own, shows the
// merged story live on /api/timeline. Once B owns round_topic 2, kp-2 is
// killed (SIGKILL): B loses its proxy, the coordinator evicts it after its
// 10 s session timeout and A takes 0,1,2 back through kp-1. kp-view and
// `kproxy replay --from-topic` then tell the split A [0 1] / B [2] with A's
// commit during revocation (replay: as the two journals merged tell that
// generation, while kp-1's journal alone does not observe B), report kp-2
// silent from about when it was killed (view's log, replay's warnings), and
// tell the generation after the kill without inventing what kp-2 could no
// longer see: B's departure is neither a LeaveGroup it never sent nor a
// session timeout inferred from heartbeats only kp-2 could have seen, and
// the group notes kp-2's silence.
func TestScenario45(t *testing.T) {
	const topic, group, events = "round_topic", "test_group_45", "kproxy_events_45"
	freshTopic(t, topic, 3, group)
	deleteTopic(t, events)
	feed(t, brokerAddr, topic, 600)

	publish := func(id string) []string {
		return []string{"--events-topic", events, "--instance-id", id}
	}
	k1 := startFleetKproxy(t, 1, "kp-1", publish("kp-1")...)
	k2 := startFleetKproxy(t, 2, "kp-2", publish("kp-2")...)
	waitTopic(t, events)
	view := startFleetKproxy(t, 0, "kp-view", "--fleet-topic", events, "--admin", proxyAdmin)
	l1, _ := fleetListen(t, 1)
	l2, _ := fleetListen(t, 2)

	a, b, commit := runSplit(t, topic, group, l1, l2)

	// kp-view, which no client dials, tells the split live.
	var live *report
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		r, raw, err := apiTimeline(proxyAdmin, group)
		if err == nil && len(r.Groups) == 1 {
			if gen, _ := r.Groups[0].find(0, "consumer-A", "consumer-B"); gen != nil &&
				gen.Status == "stable" && slices.Equal(all(gen.member("consumer-A").Assignment), parts(topic, 0, 1)) &&
				slices.Equal(all(gen.member("consumer-B").Assignment), parts(topic, 2)) {
				live = r
				writeRun(t, "view-live.json", raw)
				break
			}
		}
		if time.Now().After(deadline) {
			writeRun(t, "view-live.json", raw)
			t.Fatalf("kp-view's /api/timeline does not show A [0 1] / B [2] within 30 s (%v); kept in view-live.json\n%s", err, view.proc.tail())
		}
	}
	t.Logf("kp-view live: %s", live.Groups[0].summary())

	// kp-2 dies: B is cut off; the coordinator evicts it after its session
	// timeout and A, through kp-1, takes every partition back.
	killedAt := time.Now()
	k2.stopped = true
	k2.proc.kill()
	markA := a.mark()
	a.waitFor(markA, 40*time.Second, "A owning round_topic 0,1,2 after B's eviction", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1, 2))
	})
	// kp-view tells A's generation alone too, with B's departure.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		r, raw, err := apiTimeline(proxyAdmin, group)
		if err == nil && len(r.Groups) == 1 {
			g := r.Groups[0]
			if _, i := g.find(0, "consumer-A", "consumer-B"); i >= 0 {
				if gen, _ := g.find(i+1, "consumer-A"); gen != nil && gen.Status == "stable" && gen.member("consumer-B") == nil {
					writeRun(t, "view-after-kill.json", raw)
					t.Logf("kp-view after the kill: %s", g.summary())
					checkNotInvented(t, "kp-view", raw, group, gen, g.Generations[i].member("consumer-B").MemberID)
					break
				}
			}
		}
		if time.Now().After(deadline) {
			writeRun(t, "view-after-kill.json", raw)
			t.Fatalf("kp-view's /api/timeline does not show A alone after the kill within 30 s (%v); kept in view-after-kill.json", err)
		}
	}
	checkSilentLogged(t, "kp-view", "kp-2", killedAt)
	b.kill()
	a.stop(60 * time.Second)
	k1.stop()

	r, raw, warnings := replayFromTopic(t, "fleet-timeline", events)
	writeRun(t, "fleet-timeline.stderr", []byte(warnings))
	g := r.group(t, group)
	t.Logf("replay --from-topic: %s", g.summary())
	checkSilentWarned(t, warnings, "kp-2", killedAt)

	// The split, as one kproxy in front of both would tell it (scenario 1).
	first, i := g.mustFind(t, 0, "consumer-A")
	if got := all(first.member("consumer-A").Assignment); !slices.Equal(got, parts(topic, 0, 1, 2)) {
		t.Errorf("gen %d: A's assignment %v; want %v", first.Generation, got, parts(topic, 0, 1, 2))
	}
	second, j := g.mustFind(t, i+1, "consumer-A", "consumer-B")
	checkSplit(t, second, topic, commit)
	ma, mb := second.member("consumer-A"), second.member("consumer-B")
	if ma.Status == "unobserved" || mb.Status == "unobserved" {
		t.Errorf("gen %d: A %s, B %s; the fleet observed both", second.Generation, ma.Status, mb.Status)
	}

	// Up to the kill, the fleet's story of the split is the one the two
	// journals tell merged, once the instance a client address was seen
	// through (" via kp-2", telling apart the clients of sidecars, which
	// may share an address) is removed, but for the times: the merge
	// estimates the instances' clock offset from the coordinator's
	// simultaneous answers, which two processes on a busy machine observe
	// some milliseconds apart, and may correct by that much although the
	// two share one clock (replay notes it).
	_, jraw, _ := replayArgs(t, "journals-timeline", k1.journal, k2.journal)
	via := regexp.MustCompile(` via [^"]+"`)
	fromTopic := via.ReplaceAll(rawGeneration(t, raw, group, second.Generation), []byte(`"`))
	for _, d := range jsonDiff(t, fromTopic, rawGeneration(t, jraw, group, second.Generation), 50*time.Millisecond) {
		t.Errorf("gen %d from the topic differs from the journals merged: %s", second.Generation, d)
	}

	// kp-1 alone tells B only as the leader A listed it: not observed.
	alone, _, _ := replayArgs(t, "kp-1-timeline", k1.journal)
	var seenB string
	for _, gen := range alone.group(t, group).Generations {
		if gen.Generation != second.Generation {
			continue
		}
		for _, m := range gen.Members {
			if m.MemberID == mb.MemberID {
				seenB = m.Status
			}
		}
	}
	if seenB != "unobserved" {
		t.Errorf("kp-1's journal alone: B %q in gen %d; want unobserved (its traffic went through kp-2)", seenB, second.Generation)
	}

	// After the kill: A alone with 0,1,2; B's departure is not a LeaveGroup
	// (B never sent one), and nothing is told of B after kp-2 died.
	third, _ := g.mustFind(t, j+1, "consumer-A")
	if third.member("consumer-B") != nil {
		t.Errorf("gen %d: B still a member after its eviction", third.Generation)
	}
	if got := all(third.member("consumer-A").Assignment); !slices.Equal(got, parts(topic, 0, 1, 2)) {
		t.Errorf("gen %d: A's assignment %v; want %v", third.Generation, got, parts(topic, 0, 1, 2))
	}
	checkNotInvented(t, "replay --from-topic", raw, group, third, mb.MemberID)
}

// checkSilentLogged requires kproxy's log (NAME.err in the run directory)
// to report instance silent once, last heard within 2 s before killedAt
// (100 ms after it for a clock correction of the instance), and no other
// instance silent.
func checkSilentLogged(t *testing.T, name, instance string, killedAt time.Time) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir(t), name+".err"))
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "instance went silent") {
			continue
		}
		var f struct {
			Instance  string `json:"instance_id"`
			LastHeard string `json:"last_heard"`
		}
		if i := strings.Index(line, "{"); i < 0 || json.Unmarshal([]byte(line[i:]), &f) != nil {
			t.Errorf("%s: cannot read the fields of %q", name, line)
			continue
		}
		if f.Instance != instance {
			t.Errorf("%s: %s reported silent; only %s was killed: %s", name, f.Instance, instance, line)
			continue
		}
		found++
		// The console log's times are the clock time of day, local.
		heard, err := time.ParseInLocation("15:04:05.000", f.LastHeard, time.Local)
		if err != nil {
			t.Errorf("%s: last_heard %q: %v", name, f.LastHeard, err)
			continue
		}
		y, m, d := killedAt.Date()
		heard = time.Date(y, m, d, heard.Hour(), heard.Minute(), heard.Second(), heard.Nanosecond(), time.Local)
		if heard.After(killedAt.Add(100*time.Millisecond)) || killedAt.Sub(heard) > 2*time.Second {
			t.Errorf("%s: %s last heard at %s; it was killed at %s (markers every second)", name, instance, heard, killedAt)
		}
	}
	if found != 1 {
		t.Errorf("%s: %s reported silent %d times; want once (it was killed at %s)", name, instance, found, killedAt)
	}
}

// checkSilentWarned requires replay's warnings to say instance went silent
// within 2 s before killedAt (markers come every second; 100 ms after it
// for a clock correction of the instance), and no other instance.
func checkSilentWarned(t *testing.T, warnings, instance string, killedAt time.Time) {
	t.Helper()
	re := regexp.MustCompile(`instance (\S+) went silent after (\S+) `)
	ms := re.FindAllStringSubmatch(warnings, -1)
	if len(ms) != 1 || ms[0][1] != instance {
		t.Errorf("replay --from-topic's warnings %q; want %s, and only it, gone silent", warnings, instance)
		return
	}
	heard, err := time.Parse(time.RFC3339Nano, ms[0][2])
	if err != nil {
		t.Errorf("replay --from-topic: silent after %q: %v", ms[0][2], err)
		return
	}
	if heard.After(killedAt.Add(100*time.Millisecond)) || killedAt.Sub(heard) > 2*time.Second {
		t.Errorf("replay --from-topic: %s silent after %s; it was killed at %s (markers every second)", instance, heard, killedAt)
	}
}

// rawGeneration is the JSON object of group's generation gen in a report.
func rawGeneration(t *testing.T, raw []byte, group string, gen int32) json.RawMessage {
	t.Helper()
	var doc struct {
		Groups []struct {
			Group       string            `json:"group"`
			Generations []json.RawMessage `json:"generations"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, g := range doc.Groups {
		if g.Group != group {
			continue
		}
		for _, r := range g.Generations {
			var n struct {
				Generation int32 `json:"generation"`
			}
			if json.Unmarshal(r, &n) == nil && n.Generation == gen {
				return r
			}
		}
	}
	t.Fatalf("no generation %d of %s in the report", gen, group)
	return nil
}

// unknownNote is an entry of a report's unknown list: what the story
// could not see, and why.
type unknownNote struct {
	What string `json:"what"`
	Why  string `json:"why"`
}

// groupUnknown is the unknown list of group in a report.
func groupUnknown(t *testing.T, raw []byte, group string) []unknownNote {
	t.Helper()
	var doc struct {
		Groups []struct {
			Group   string        `json:"group"`
			Unknown []unknownNote `json:"unknown"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, g := range doc.Groups {
		if g.Group == group {
			return g.Unknown
		}
	}
	return nil
}

// checkNotInvented requires the story (raw, the report of source) to tell
// what kp-2 no longer saw without inventing it: B's departure (member id
// b) in gen is neither a LeaveGroup B never sent nor a session timeout
// inferred from heartbeats the fleet could not see (kp-2 carried them),
// and the group notes kp-2's silence.
func checkNotInvented(t *testing.T, source string, raw []byte, group string, gen *generation, b string) {
	t.Helper()
	for _, d := range gen.Departed {
		if d.MemberID == b && (d.How == "left" || d.How == "session_timeout") {
			t.Errorf("%s: gen %d: B's departure told as %q (%s); kp-2, which carried B's traffic, was silent", source, gen.Generation, d.How, d.Reason)
		}
	}
	if gen.Trigger.Kind == "session_timeout" {
		t.Errorf("%s: gen %d: trigger %+v inferred while kp-2, which carried B's heartbeats, was silent", source, gen.Generation, gen.Trigger)
	}
	var noted bool
	for _, u := range groupUnknown(t, raw, group) {
		if u.What == "silent instance kp-2" && strings.Contains(u.Why, "kp-2") {
			noted = true
		}
	}
	if !noted {
		t.Errorf("%s: the story of %s does not note kp-2's silence (unknown: %+v)", source, group, groupUnknown(t, raw, group))
	}
}

// jsonDiff lists where JSON documents a and b differ, but for times (RFC
// 3339 strings) and durations (numbers under keys ending in Ms) within tol
// of each other.
func jsonDiff(t *testing.T, a, b []byte, tol time.Duration) []string {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	var diffs []string
	var walk func(path, key string, x, y any)
	walk = func(path, key string, x, y any) {
		switch xv := x.(type) {
		case map[string]any:
			yv, ok := y.(map[string]any)
			if !ok {
				break
			}
			keys := map[string]bool{}
			for k := range xv {
				keys[k] = true
			}
			for k := range yv {
				keys[k] = true
			}
			for k := range keys {
				walk(path+"."+k, k, xv[k], yv[k])
			}
			return
		case []any:
			yv, ok := y.([]any)
			if !ok || len(xv) != len(yv) {
				break
			}
			for i := range xv {
				walk(fmt.Sprintf("%s[%d]", path, i), key, xv[i], yv[i])
			}
			return
		case string:
			ys, ok := y.(string)
			tx, ex := time.Parse(time.RFC3339Nano, xv)
			ty, ey := time.Parse(time.RFC3339Nano, ys)
			if ok && ex == nil && ey == nil && (tx.Sub(ty) <= tol && ty.Sub(tx) <= tol) {
				return
			}
		case float64:
			yf, ok := y.(float64)
			if ok && strings.HasSuffix(key, "Ms") && math.Abs(xv-yf) <= float64(tol)/float64(time.Millisecond) {
				return
			}
		}
		if fmt.Sprint(x) != fmt.Sprint(y) {
			diffs = append(diffs, fmt.Sprintf("%s: %v / %v", path, x, y))
		}
	}
	walk("", "", x, y)
	slices.Sort(diffs)
	return diffs
}
