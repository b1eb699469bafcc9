package main

import (
	"strings"
	"testing"
)

// TestDiagnoseCommand runs `kproxy diagnose` on the recorded seed journal
// (franz-go consumers A and B, a normal join and leave: nothing to find)
// and checks its flags.
func TestDiagnoseCommand(t *testing.T) {
	const journal = "../../testdata/journals/seed-rebalance"
	cases := []struct {
		name    string
		args    []string
		want    string // the whole output, or the error's text
		wantErr bool
	}{
		{"json", []string{"diagnose", journal, "--format", "json"}, "{\n  \"findings\": []\n}\n", false},
		{"text", []string{"diagnose", journal}, "no findings\n", false},
		{"group", []string{"diagnose", journal, "--group", "other", "--format", "json"}, "{\n  \"findings\": []\n}\n", false},
		{"window", []string{"diagnose", journal, "--since", "2026-11-29T15:08:00Z", "--until", "2026-11-29T15:08:05Z"}, "no findings\n", false},
		{"bad format", []string{"diagnose", journal, "--format", "html"}, `--format "html": want text or json`, true},
		{"until before since", []string{"diagnose", journal, "--since", "2026-11-29T15:08:05Z", "--until", "2026-11-29T15:08:00Z"}, "is before --since", true},
		{"storm rebalances below 2", []string{"diagnose", journal, "--storm-rebalances", "1"}, "diagnose: --storm-rebalances 1: want at least 2", true},
		{"storm window not positive", []string{"diagnose", journal, "--storm-window", "0s"}, "diagnose: --storm-window 0s: want a positive duration", true},
		{"bad time", []string{"diagnose", journal, "--since", "yesterday"}, "want an RFC 3339 time", true},
		{"missing journal", []string{"diagnose", "/nonexistent/journal"}, "diagnose:", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := runKproxy(t, c.args...)
			if c.wantErr {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got error %v; want one containing %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("diagnose: %v\n%s", err, out)
			}
			if out != c.want {
				t.Errorf("got %q; want %q", out, c.want)
			}
		})
	}
}
