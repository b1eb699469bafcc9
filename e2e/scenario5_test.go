//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"
)

// TestScenario5: librdkafka (confluent-kafka), kafkajs and franz-go
// consumers in one group. Each encodes the consumer protocol its own way;
// the timeline decodes every member's subscription and assignment. They
// share the round-robin assignor under its common name "roundrobin".
func TestScenario5(t *testing.T) {
	const topic, group = "mixed_topic", "test_group_5"
	freshTopic(t, topic, 6, group)
	k := startKproxy(t, true)
	bs := bootstrap(k)
	feed(t, bs, topic, 600)

	common := []string{"--bootstrap", bs, "--group", group, "--topic", topic, "--work-ms", "300"}
	ps := map[string]*proc{
		"confluent": confluentKafka(t, "confluent", append(common, "--client-id", "confluent")...),
		"kafkajs":   kafkaJS(t, "kafkajs", append(common, "--client-id", "kafkajs")...),
		"franz":     franzGo(t, "franz", "consume", "-bootstrap", bs, "-group", group, "-topic", topic, "-client-id", "franz", "-work-ms", "300"),
	}
	names := []string{"confluent", "franz", "kafkajs"}
	// All three in, two partitions each, every partition owned once.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		owned := map[string][]string{}
		var union []string
		for n, p := range ps {
			for _, e := range p.snapshot() {
				if e.Name == "assigned" {
					owned[n] = all(e.Partitions)
				}
			}
			union = append(union, owned[n]...)
		}
		slices.Sort(union)
		ok := slices.Equal(union, parts(topic, 0, 1, 2, 3, 4, 5))
		for _, n := range names {
			ok = ok && len(owned[n]) == 2
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stable three-way split; owned %v\n%s%s%s", owned, ps["confluent"].tail(), ps["kafkajs"].tail(), ps["franz"].tail())
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, n := range names {
		ps[n].waitFor(0, 30*time.Second, "a batch", func(e event) bool { return e.Name == "polled" })
	}
	for _, n := range names {
		ps[n].stop(60 * time.Second)
	}
	r := k.finish()
	if r == nil {
		return
	}
	g := r.group(t, group)

	gen, _ := g.mustFind(t, 0, names...)
	if gen.ProtocolType != "consumer" || gen.Protocol != "roundrobin" {
		t.Errorf("gen %d: protocol %s/%s; want consumer/roundrobin", gen.Generation, gen.ProtocolType, gen.Protocol)
	}
	var union []string
	for _, n := range names {
		m := gen.member(n)
		if !slices.Equal(m.Subscription, []string{topic}) {
			t.Errorf("gen %d: %s's subscription %v; want [%s]", gen.Generation, n, m.Subscription, topic)
		}
		if got := all(m.Assignment); len(got) != 2 {
			t.Errorf("gen %d: %s's assignment %v; want two partitions", gen.Generation, n, got)
		}
		union = append(union, all(m.Assignment)...)
	}
	slices.Sort(union)
	if !slices.Equal(union, parts(topic, 0, 1, 2, 3, 4, 5)) {
		t.Errorf("gen %d: assignments cover %v; want every partition once", gen.Generation, union)
	}
}
