//go:build e2e

package e2e

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// classicStreamsMember is a member of a classic Kafka Streams group's
// generation as scenario 53 reads it; docs/timeline-json.md is the
// contract.
type classicStreamsMember struct {
	MemberID string `json:"memberId"`
	ClientID string `json:"clientId"`
	Streams  *struct {
		ProcessID       string           `json:"processId"`
		UserEndpoint    string           `json:"userEndpoint"`
		TaskOffsetSums  map[string]int64 `json:"taskOffsetSums"`
		Active          []string         `json:"active"`
		Standby         []string         `json:"standby"`
		ActiveGained    []string         `json:"activeGained"`
		ActiveLost      []string         `json:"activeLost"`
		NextRebalanceAt *string          `json:"nextRebalanceAt"`
	} `json:"streams"`
}

type classicStreamsGen struct {
	Generation int32                  `json:"generation"`
	Protocol   string                 `json:"protocol"`
	Trigger    trigger                `json:"trigger"`
	Members    []classicStreamsMember `json:"members"`
}

// TestScenario53: a Kafka Streams 4.4 application (StreamsApp: one
// subtopology of three stateful tasks) on the classic protocol
// (group.protocol=classic, assignor "stream") through kproxy. Instance A
// starts alone and runs the three tasks; B joins. B has no state, and with
// acceptable.recovery.lag 10 (each task's changelog holds 100 records) the
// leader keeps the tasks on A, gives B warm-ups (standby tasks) and
// schedules a KIP-441 probing rebalance 60 s later
// (probing.rebalance.interval.ms, its minimum); then the caught-up tasks
// move to B. Each instance prints its tasks as they change. The replayed
// report must hold, per generation, the task sets the instances printed,
// the tasks B ended with gained by B and lost by A, the scheduled probing
// rebalance as trigger probing_rebalance, and no storm.
func TestScenario53(t *testing.T) {
	const app = "streams_app_53"
	k := startKproxyWith(t, true, brokerAddr, "--admin", proxyAdmin)
	sa := newStreamsApp(t, app, "streams53", k, "--group-protocol", "classic", "--acceptable-lag", "10", "--probing-ms", "60000")
	a := sa.start("streams-A", "127.0.0.1:7531")
	allTasks(a, 0, 120*time.Second, "A running with the three tasks")
	b := sa.start("streams-B", "127.0.0.1:7532")
	lastA, lastB := settleTasks(t, "settled", a, b, 0, 0, 180*time.Second)
	b.stop(60 * time.Second)
	time.Sleep(2 * time.Second)
	a.stop(60 * time.Second)
	r := k.finish()
	if r == nil {
		return
	}
	raw, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Groups []struct {
			Group       string              `json:"group"`
			Generations []classicStreamsGen `json:"generations"`
			Storms      []json.RawMessage   `json:"storms"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	var gens []classicStreamsGen
	var storms []json.RawMessage
	for _, g := range rep.Groups {
		if g.Group == app {
			gens, storms = g.Generations, g.Storms
		}
	}
	if len(gens) == 0 {
		t.Fatalf("group %s has no generations in the report", app)
	}
	clientA, clientB := lastA.ClientID, lastB.ClientID
	byClient := func(g classicStreamsGen, client string) *classicStreamsMember {
		for i := range g.Members {
			if g.Members[i].ClientID == client {
				return &g.Members[i]
			}
		}
		return nil
	}
	// Every task set an instance printed while running is the one some
	// generation gave it.
	for _, c := range []struct {
		p      *proc
		client string
	}{{a, clientA}, {b, clientB}} {
		for _, e := range c.p.snapshot() {
			if e.Name != "tasks" || e.State != "RUNNING" {
				continue
			}
			found := false
			for _, g := range gens {
				if m := byClient(g, c.client); m != nil && m.Streams != nil &&
					slices.Equal(m.Streams.Active, nonNil(e.Active)) && slices.Equal(m.Streams.Standby, nonNil(e.Standby)) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s printed active %v standby %v; no generation of the report gave it those", c.client, e.Active, e.Standby)
			}
		}
	}
	// The tasks B ended with moved: gained by B, lost by A.
	var gainedB, lostA []string
	var sawProbing, warmedUp bool
	processes := map[string]string{}
	for i, g := range gens {
		if g.Protocol != "stream" {
			t.Errorf("gen %d: protocol %q, want stream", g.Generation, g.Protocol)
		}
		t.Logf("gen %d trigger %s %s %q", g.Generation, g.Trigger.Kind, g.Trigger.Member, g.Trigger.Reason)
		// The probing rebalance moves the caught-up tasks: the next
		// generation is the follow-up that hands them over, started by the
		// old owner's rejoin after revoking them or by the new owner's,
		// whose assignment scheduled it, whichever came first.
		if i > 0 && gens[i-1].Trigger.Kind == "probing_rebalance" && g.Trigger.Kind != "cooperative_follow_up" {
			t.Errorf("gen %d after the probing rebalance: trigger %s, want cooperative_follow_up", g.Generation, g.Trigger.Kind)
		}
		if g.Trigger.Kind == "probing_rebalance" {
			sawProbing = true
			if !strings.HasPrefix(g.Trigger.Reason, "triggered followup rebalance scheduled for ") {
				t.Errorf("gen %d: probing rebalance with reason %q", g.Generation, g.Trigger.Reason)
			}
		}
		for _, client := range []string{clientA, clientB} {
			m := byClient(g, client)
			if m == nil || m.Streams == nil {
				continue
			}
			s := m.Streams
			next := "none"
			if s.NextRebalanceAt != nil {
				next = *s.NextRebalanceAt
			}
			t.Logf("  %s active %v standby %v gained %v lost %v offset sums %v follow-up %s", client, s.Active, s.Standby,
				s.ActiveGained, s.ActiveLost, s.TaskOffsetSums, next)
			if s.ProcessID != "" {
				processes[client] = s.ProcessID
			}
			if client == clientB {
				gainedB = append(gainedB, s.ActiveGained...)
				if len(s.Active) == 0 && len(s.Standby) > 0 {
					warmedUp = true
				}
			} else {
				lostA = append(lostA, s.ActiveLost...)
			}
		}
	}
	for _, task := range lastB.Active {
		if !slices.Contains(gainedB, task) || !slices.Contains(lostA, task) {
			t.Errorf("task %s, B's at the end: gained by B %v, lost by A %v; want it in both", task, gainedB, lostA)
		}
	}
	if len(processes) != 2 || processes[clientA] == processes[clientB] {
		t.Errorf("process ids %v; want two distinct ones", processes)
	}
	if !warmedUp {
		t.Errorf("no generation gave B warm-up (standby) tasks and no active ones")
	}
	if !sawProbing {
		t.Errorf("no generation was triggered by a probing rebalance")
	}
	if len(storms) != 0 {
		t.Errorf("storms %s; want none", storms)
	}
	// The diagnosis: B waiting on warm-ups is not idle, and the three
	// rebalances, one of them probing, are no loop.
	var kinds []string
	for _, f := range k.diagnose(app) {
		kinds = append(kinds, f.Kind)
	}
	t.Logf("findings %v", kinds)
	if slices.Contains(kinds, "member_without_partitions") || slices.Contains(kinds, "rebalance_loop") {
		t.Errorf("diagnosis kinds %v; want no member_without_partitions (B held warm-ups) and no rebalance_loop", kinds)
	}
	// The text timeline lists the tasks next to the partitions.
	text := replayFormat(t, k, "text")
	for _, want := range []string{"tasks active " + strings.Join(lastB.Active, " "), "trigger: probing rebalance"} {
		if !strings.Contains(text, want) {
			t.Errorf("text timeline lacks %q", want)
		}
	}
	// replay's HTML page, in Chromium: the latest generation's members
	// with their tasks next to their partitions, as the report has them.
	htmlFile := filepath.Join(runDir(t), "timeline.html")
	runKproxyCmd(t, "replay", k.journal, "--format", "html", "--output", htmlFile)
	cells := onPage(t, "streams-classic-file", "file://"+htmlFile+"#/", app, `document.querySelectorAll('#plan tr[data-member]').length > 0`,
		`Array.from(document.querySelectorAll('#plan tr[data-member] td.assignment')).map(c => c.innerText.replace(/\n/g, ' | '))`)
	var want []string
	for _, m := range gens[len(gens)-1].Members {
		if m.Streams == nil || m.Streams.Active == nil {
			t.Fatalf("gen %d: member %s has no tasks in the report", gens[len(gens)-1].Generation, m.MemberID)
		}
		w := "tasks " + cmp.Or(strings.Join(m.Streams.Active, " "), "none")
		var moved []string
		for _, x := range m.Streams.ActiveGained {
			moved = append(moved, "+"+x)
		}
		for _, x := range m.Streams.ActiveLost {
			moved = append(moved, "−"+x)
		}
		if len(moved) > 0 {
			w += " (" + strings.Join(moved, " ") + ")"
		}
		if len(m.Streams.Standby) > 0 {
			w += " standby " + strings.Join(m.Streams.Standby, " ")
		}
		want = append(want, w)
	}
	if len(cells) != len(want) {
		t.Fatalf("page: assignment cells %q; want tasks %q", cells, want)
	}
	for i := range cells {
		if !strings.HasSuffix(cells[i], " | "+want[i]) {
			t.Errorf("page: assignment cell %q; want it to end with %q", cells[i], want[i])
		}
	}
}
