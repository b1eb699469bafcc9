package main

import (
	"strings"
	"testing"
)

// lossesJournal is journal's crafted journal: gaps of 3, 5 and 2^64-2,
// the 5 with a suspension record blaming a full disk.
const lossesJournal = "../../testdata/journals/losses"

// TestInspectTellsLossesApart: `journal inspect --summary` and replay's
// warnings tell the exchanges a write error lost from those a full queue
// dropped, and show a total that saturated as a lower bound.
func TestInspectTellsLossesApart(t *testing.T) {
	sum := mustRun(t, "journal", "inspect", "--summary", lossesJournal)
	for _, want := range []string{
		"dropped:          18446744073709551615 (at least) exchanges\n",
		"  queue full:     18446744073709551610 (at least) (kproxy's observer queue or the journal writer's queue was full)\n",
		"  write error:    5 (journaling suspended 1 time(s) by a write error, the first: journal: write /var/lib/kproxy/journal-x.kpj: write: no space left on device)\n",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	_, stderr, err := runKproxySplit(t, "replay", lossesJournal)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"the journal misses 18446744073709551610 (at least) exchanges its writer dropped (queue full)",
		"the journal misses 5 exchanges lost while a write error had journaling suspended (journal: write /var/lib/kproxy/journal-x.kpj: write: no space left on device)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("replay's warnings lack %q:\n%s", want, stderr)
		}
	}
}
