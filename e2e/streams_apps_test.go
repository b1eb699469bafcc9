//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// appTasks is the three tasks of StreamsApp's one subtopology, over
// an input topic of three partitions.
var appTasks = []string{"0_0", "0_1", "0_2"}

// streamsApp is a Kafka Streams application (the Java client's
// StreamsApp: a stateless branch and a count over its input) whose
// instances scenarios 48 and 53 run through kproxy.
type streamsApp struct {
	t                          *testing.T
	app, input, output, counts string
	bootstrap                  string
	flags                      []string // the instances' flags beyond topics, state and client id
}

// newStreamsApp creates the topics of application app (named after
// prefix), fresh, with 300 records of 30 keys in its input, for instances
// started with flags through k.
func newStreamsApp(t *testing.T, app, prefix string, k *kproxy, flags ...string) *streamsApp {
	s := &streamsApp{t: t, app: app, input: prefix + "_in", output: prefix + "_out", counts: prefix + "_counts",
		bootstrap: bootstrap(k), flags: flags}
	freshTopic(t, s.input, 3, app)
	freshTopic(t, s.output, 3, "")
	freshTopic(t, s.counts, 3, "")
	deleteTopics(t, app+"-counts-store-changelog")
	produceDirect(t, s.input, 300, func(i int) (string, string) { return fmt.Sprintf("k%d", i%30), fmt.Sprintf("v%d", i) })
	return s
}

// start starts an instance with client id name, advertising endpoint
// (application.server).
func (s *streamsApp) start(name, endpoint string) *proc {
	return javaClient(s.t, name, "streams", append([]string{"--bootstrap", s.bootstrap, "--app-id", s.app,
		"--input", s.input, "--output", s.output, "--counts", s.counts,
		"--state-dir", filepath.Join(runDir(s.t), "state-"+name), "--client-id", name,
		"--app-server", endpoint, "--guarantee", "at_least_once"}, s.flags...)...)
}

// allTasks waits up to within for p to print, from its event from on,
// that it runs all three tasks (what names the wait), and returns that
// event.
func allTasks(p *proc, from int, within time.Duration, what string) event {
	return p.waitFor(from, within, what, func(e event) bool {
		return e.Name == "tasks" && e.State == "RUNNING" && slices.Equal(e.Active, appTasks)
	})
}

// settleTasks waits until instances a and b share the three active tasks,
// both running, each printed its tasks since its events fromA and fromB,
// and neither printed anything for 3 s; it returns their last tasks.
func settleTasks(t *testing.T, what string, a, b *proc, fromA, fromB int, within time.Duration) (event, event) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		failOnExit(t, a, b)
		la, lb := lastTasks(a, fromA), lastTasks(b, fromB)
		quiet := la.Name != "" && lb.Name != "" && time.Since(la.At()) > 3*time.Second && time.Since(lb.At()) > 3*time.Second
		if quiet && la.State == "RUNNING" && lb.State == "RUNNING" && len(lb.Active) > 0 && len(la.Active) > 0 &&
			slices.Equal(slices.Sorted(slices.Values(append(slices.Clone(la.Active), lb.Active...))), appTasks) {
			t.Logf("%s: A active %v standby %v; B active %v standby %v", what, la.Active, la.Standby, lb.Active, lb.Standby)
			return la, lb
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: A and B did not settle on sharing the three tasks within %s\nA:\n%s\nB:\n%s", what, within, a.tail(), b.tail())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// lastTasks is the last tasks event p printed from its event from on;
// zero when none.
func lastTasks(p *proc, from int) event {
	evs := p.snapshot()
	for i := len(evs) - 1; i >= from; i-- {
		if evs[i].Name == "tasks" {
			return evs[i]
		}
	}
	return event{}
}
