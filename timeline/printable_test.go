package timeline

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// forged is a group id a hostile client chose to forge a log line and
// retitle the operator's terminal.
const forged = "g\n10:29:00.000\tERROR\tFORGED \x1b]0;pwned\x07"

// TestTextEscapesClientStrings: ids and names that clients choose are
// written escaped wherever the timeline writes for people, the console
// lines of its entries and the text report: each line stays one line, and
// no control character reaches the terminal.
func TestTextEscapesClientStrings(t *testing.T) {
	check := func(t *testing.T, out string, lines int) {
		t.Helper()
		if got := strings.Count(out, "\n"); got != lines {
			t.Errorf("%d lines; want %d:\n%s", got, lines, out)
		}
		for _, c := range strings.ReplaceAll(out, "\n", "") {
			if c < 0x20 || c == 0x7f {
				t.Errorf("control character %q in %q", c, out)
			}
		}
		if !strings.Contains(out, `\n10:29:00.000\tERROR\tFORGED \x1b]0;pwned\a`) {
			t.Errorf("the id is not shown escaped in %q", out)
		}
	}
	t.Run("entry", func(t *testing.T) {
		e := Entry{At: time.Unix(0, 0), Group: forged, Kind: KindRebalanceStarted, Text: "member joined " + forged,
			Detail: []string{"members (1): " + forged}}
		var b bytes.Buffer
		if err := WriteEntryText(&b, e); err != nil {
			t.Fatal(err)
		}
		check(t, b.String(), 2)
		check(t, strings.Join(e.Lines(), "\n")+"\n", 2)
	})
	t.Run("report", func(t *testing.T) {
		at := "1970-01-01T00:00:00Z"
		r := &Report{Groups: []GroupReport{{Group: forged, GroupProtocol: "classic", FirstSeen: at, LastSeen: at,
			Generations: []GenerationReport{{Generation: 1, Status: "stable", Leader: forged,
				Members: []MemberReport{{MemberID: forged, ClientID: forged}}}}}}}
		var b bytes.Buffer
		if err := WriteText(&b, r, time.UTC); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		check(t, out, strings.Count(out, "\n"))
		if n := strings.Count(out, "FORGED"); n < 3 {
			t.Errorf("the id appears %d times; want it in the header, the leader and the member:\n%s", n, out)
		}
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if strings.HasPrefix(line, "10:29") {
				t.Errorf("a forged line of its own: %q", line)
			}
		}
	})
}
