package main

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/diagnose"
)

// TestStormFindingsLogger: after a storm the timeline logs a "findings"
// block: for people the header and each finding's block indented, for
// machines the findings' ids.
func TestStormFindingsLogger(t *testing.T) {
	f := diagnose.Finding{ID: "rebalance_loop/g/-/2024-03-07T14:02:10Z", Kind: diagnose.RebalanceLoop, Group: "g",
		Severity: diagnose.Critical, At: "2024-03-07T14:02:10Z", Members: []diagnose.Member{{MemberID: "A-1", ClientID: "a"}},
		Partitions: map[string][]int32{}, Evidence: map[string]any{"rebalances": 6}, Explanation: "why", Suggestion: "fix"}
	cases := []struct {
		name, format string
		check        func(t *testing.T, e observer.LoggedEntry)
	}{
		{"console", "console", func(t *testing.T, e observer.LoggedEntry) {
			want := "g findings after the storm:\n    2024-03-07T14:02:10Z g rebalance_loop [critical]\n    " +
				"  member A-1 client a -\n      rebalances: 6\n      why: why\n      fix: fix"
			if e.Message != want {
				t.Errorf("got %q; want %q", e.Message, want)
			}
		}},
		{"json", "json", func(t *testing.T, e observer.LoggedEntry) {
			m := e.ContextMap()
			ids, _ := m["finding_ids"].([]any)
			if e.Message != "findings after the storm" || m["group"] != "g" || len(ids) != 1 || ids[0] != f.ID {
				t.Errorf("got %q with %v; want the finding's id", e.Message, m)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			stormFindingsLogger(zap.New(core), c.format)("g", []diagnose.Finding{f})
			if logs.Len() != 1 {
				t.Fatalf("%d entries; want 1", logs.Len())
			}
			c.check(t, logs.All()[0])
		})
	}
	if got := stormFindingsBlock("g", nil); !strings.HasSuffix(got, "none") {
		t.Errorf("block without findings %q; want it to say none", got)
	}
}
