//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScenario2: three Java consumers, eager (range), share six partitions;
// one is killed with SIGKILL. It sends no LeaveGroup, so the coordinator
// notices only when its session times out; the timeline names that trigger
// and the dead member, and shows its partitions moving to the other two.
func TestScenario2(t *testing.T) {
	const topic, group = "range_topic", "test_group_2"
	freshTopic(t, topic, 6, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 600)

	args := func(id string) []string {
		return []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--client-id", id,
			"--mode", "range", "--session-ms", "6000", "--work-ms", "300"}
	}
	names := []string{"java-A", "java-B", "java-C"}
	var ps []*proc
	for _, n := range names {
		ps = append(ps, javaClient(t, n, "consume", args(n)...))
	}
	// Range over six partitions, members sorted by member id (client id
	// first): A 0,1; B 2,3; C 4,5.
	want := map[string][]string{"java-A": parts(topic, 0, 1), "java-B": parts(topic, 2, 3), "java-C": parts(topic, 4, 5)}
	for i, p := range ps {
		p.waitFor(0, 90*time.Second, "owning "+strings.Join(want[names[i]], ","), func(e event) bool {
			return e.Name == "assigned" && slices.Equal(all(e.Owned), want[names[i]])
		})
	}
	for _, p := range ps {
		p.waitFor(0, 30*time.Second, "a batch", func(e event) bool { return e.Name == "polled" })
	}

	marks := []int{ps[0].mark(), ps[1].mark()}
	killedAt := time.Now()
	ps[2].kill()
	// Range again, over A and B: A 0,1,2; B 3,4,5.
	after := map[string][]string{"java-A": parts(topic, 0, 1, 2), "java-B": parts(topic, 3, 4, 5)}
	for i, p := range ps[:2] {
		e := p.waitFor(marks[i], 60*time.Second, "owning "+strings.Join(after[names[i]], ","), func(e event) bool {
			return e.Name == "assigned" && slices.Equal(all(e.Owned), after[names[i]])
		})
		if e.At().Sub(killedAt) < 3*time.Second {
			t.Errorf("%s reassigned %s after the kill: too soon for a 6 s session timeout", names[i], e.At().Sub(killedAt))
		}
	}
	ps[0].stop(60 * time.Second)
	ps[1].stop(60 * time.Second)
	r := k.finish()
	if r == nil {
		return
	}
	g := r.group(t, group)

	three, i := g.mustFind(t, 0, names...)
	for _, n := range names {
		if got := all(three.member(n).Assignment); !slices.Equal(got, want[n]) {
			t.Errorf("gen %d: %s's assignment %v; want %v", three.Generation, n, got, want[n])
		}
	}
	if three.Protocol != "range" {
		t.Errorf("gen %d: protocol %q; want range", three.Generation, three.Protocol)
	}
	dead := three.member("java-C").MemberID
	two, _ := g.mustFind(t, i+1, "java-A", "java-B")
	if two.Trigger.Kind != "session_timeout" || two.Trigger.Member != dead {
		t.Errorf("gen %d: trigger %+v; want session_timeout of java-C (%s)", two.Generation, two.Trigger, dead)
	}
	var departed bool
	for _, d := range two.Departed {
		if d.MemberID == dead {
			departed = true
			if d.How != "session_timeout" || !slices.Equal(all(d.Partitions), want["java-C"]) {
				t.Errorf("gen %d: java-C departed %q owning %v; want session_timeout owning %v", two.Generation, d.How, all(d.Partitions), want["java-C"])
			}
		}
	}
	if !departed {
		t.Errorf("gen %d: java-C (%s) not among the departed %+v", two.Generation, dead, two.Departed)
	}
	for _, n := range names[:2] {
		m := two.member(n)
		if got := all(m.Assignment); !slices.Equal(got, after[n]) {
			t.Errorf("gen %d: %s's assignment %v; want %v", two.Generation, n, got, after[n])
		}
	}
	// C's partitions 4 and 5 moved: B gained them; 2 moved from B to A.
	if got := all(two.member("java-A").Added); !slices.Equal(got, parts(topic, 2)) {
		t.Errorf("gen %d: java-A added %v; want %v", two.Generation, got, parts(topic, 2))
	}
	if got := all(two.member("java-B").Added); !slices.Equal(got, parts(topic, 4, 5)) {
		t.Errorf("gen %d: java-B added %v; want %v", two.Generation, got, parts(topic, 4, 5))
	}
	if got := all(two.member("java-B").Revoked); !slices.Equal(got, parts(topic, 2)) {
		t.Errorf("gen %d: java-B revoked %v; want %v", two.Generation, got, parts(topic, 2))
	}
}
