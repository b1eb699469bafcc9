package timeline

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
)

// TestTypedFactsAgreeWithFields: over generated rebalancing traffic and
// the golden scenarios, every entry of the kinds programs read carries its
// typed facts, and they say what its Fields say.
func TestTypedFactsAgreeWithFields(t *testing.T) {
	var entries []Entry
	cfg := Config{OnEntry: func(e Entry) { entries = append(entries, e) }}
	e := New(cfg)
	dec := decode.NewDecoder()
	tr := synth.New(synth.Options{Seed: 3, Groups: 30, MaxMembers: 8, Mix: synth.RebalanceHeavy})
	var evs []decode.Event
	for range 60_000 {
		evs, _ = dec.DecodeAppend(evs[:0], tr.Next())
		e.AddEvents(evs)
	}
	e.Close(e.now)
	suspect := seedScript() // A commits, in its revocation, an offset behind B's for B's partition
	suspect.commit(cB, 25, 25.002, "B-1", 2, "round_topic", map[int32]int64{2: 40}, nil)
	suspect.hb(cA, 30.5, 30.501, "A-1", 2, errRebalanceInProgress)
	suspect.commit(cA, 30.6, 30.603, "A-1", 2, "round_topic", map[int32]int64{0: 20, 1: 15, 2: 11}, nil)
	suspect.hb(cA, 31, 31.001, "A-1", 1, errIllegalGeneration)
	for _, s := range []*script{seedScript(), cooperativeScript(), kip848Script(), partialScript(), eosScript(0), suspect} {
		got, _, _ := run(t, Config{}, s.events(), 60)
		entries = append(entries, got...)
	}
	seen := map[Kind]int{}
	for _, en := range entries {
		if err := factsAgree(en); err != nil {
			t.Errorf("%s entry %q: %v", en.Kind, en.Text, err)
		}
		seen[en.Kind]++
	}
	for _, k := range []Kind{KindStable, KindCommit, KindSuspectCommit, KindError, KindFenced} {
		if seen[k] == 0 {
			t.Errorf("no %s entry: the traffic tests nothing of it (seen %v)", k, seen)
		}
	}
}

// factsAgree says how en's typed facts disagree with its Fields, if they
// do.
func factsAgree(en Entry) error {
	f := en.Fields
	switch en.Kind {
	case KindStable:
		st := en.Stable
		if st == nil {
			return fmt.Errorf("no StableFacts")
		}
		if ms := st.StopTheWorld.Seconds() * 1000; st.Trigger != f["trigger"] || st.Members != f["members"] ||
			(st.StopTheWorld < 0) != (f["stop_the_world_ms"].(float64) < 0) || st.StopTheWorld >= 0 && fmt.Sprintf("%.3f", ms) != fmt.Sprintf("%.3f", f["stop_the_world_ms"]) {
			return fmt.Errorf("facts %+v; fields %v", *st, f)
		}
	case KindCommit:
		c := en.Commit
		if c == nil {
			return fmt.Errorf("no CommitFacts")
		}
		during, _ := f["during_revocation"].(bool)
		errs, _ := f["errors"].(map[string]map[int32]string)
		var names []string
		for _, parts := range errs {
			for _, n := range parts {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		if c.DuringRevocation != during || c.Failed != f["failed"] || !slices.Equal(c.Errors, slices.Compact(names)) {
			return fmt.Errorf("facts %+v; fields %v", *c, f)
		}
	case KindSuspectCommit:
		if en.Suspect == nil || !slices.Equal(en.Suspect.Reasons, f["reasons"].([]string)) {
			return fmt.Errorf("facts %v; fields %v", en.Suspect, f)
		}
	case KindError, KindFenced:
		if en.Failure == nil || en.Failure.Error != f["error"] || en.Failure.API != f["api"] {
			return fmt.Errorf("facts %v; fields %v", en.Failure, f)
		}
	}
	return nil
}
