package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/demo"
	"github.com/kproxy-dev/kproxy/internal/synth"
)

// The tests here run `kproxy journal inspect`, `kproxy replay` and `kproxy
// demo` as a user does, on the shipped seed journal, on damaged copies of
// it, and on a small synthetic journal with several groups.

// runKproxySplit is runKproxy keeping stdout and stderr apart: warnings go
// to stderr, and the bytes of the two streams are not ordered.
func runKproxySplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	clearKproxyEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// mustRun runs kproxy with args, failing the test on an error or anything
// on stderr, and returns stdout.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := runKproxySplit(t, args...)
	if err != nil || errOut != "" {
		t.Fatalf("kproxy %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// lines splits output into lines, without the final empty one.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// synthJournal writes a small synthetic journal (kproxy-journalgen's
// rebalance-heavy mix) with three groups and returns its directory.
func synthJournal(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tr := synth.New(synth.Options{Seed: 1, Groups: 3, MaxMembers: 4, Mix: synth.RebalanceHeavy})
	if _, err := synth.Write(tr, synth.WriteOptions{Dir: dir, Bytes: 128 << 10}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// summary is what `journal inspect --summary` printed, parsed.
type summary struct {
	records, selected int
	apis, groups      map[string]int
	text              string
}

// selectedCount is the count of selected exchanges on the records line.
var selectedCount = regexp.MustCompile(`\((\d+) selected\)$`)

func parseSummary(t *testing.T, out string) summary {
	t.Helper()
	s := summary{selected: -1, apis: map[string]int{}, groups: map[string]int{}, text: out}
	inGroups, found := false, false
	for _, l := range lines(out) {
		switch {
		case strings.HasPrefix(l, "records:"):
			found = true
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "records:")), "%d exchanges", &s.records); err != nil {
				t.Fatalf("summary line %q: %v", l, err)
			}
			if m := selectedCount.FindStringSubmatch(l); m != nil {
				s.selected, _ = strconv.Atoi(m[1])
			}
		case strings.HasPrefix(l, "apis:"):
			for _, f := range strings.Fields(strings.TrimPrefix(l, "apis:")) {
				name, n, _ := strings.Cut(f, "=")
				s.apis[name], _ = strconv.Atoi(n)
			}
		case strings.HasPrefix(l, "groups:"):
			inGroups = true
		case inGroups && strings.HasPrefix(l, "  "):
			var g string
			var n int
			if _, err := fmt.Sscanf(l, "%s %d exchanges", &g, &n); err != nil {
				t.Fatalf("summary group line %q: %v", l, err)
			}
			s.groups[g] = n
		}
	}
	if !found {
		t.Fatalf("summary has no records line:\n%s", out)
	}
	return s
}

// inspectLine matches one exchange line of `journal inspect`.
var inspectLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z) conn=\d+ client=\S+ client_id="[^"]*" broker=-?\d+ (\w+) v(\d+) corr=(-?\d+) (latency=\S+|no_response)`)

// apiOf returns the API name of an inspect line.
func apiOf(t *testing.T, line string) string {
	t.Helper()
	m := inspectLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("not an inspect line: %q", line)
	}
	return m[2]
}

// filterLines keeps the lines keep accepts.
func filterLines(ls []string, keep func(string) bool) []string {
	var out []string
	for _, l := range ls {
		if keep(l) {
			out = append(out, l)
		}
	}
	return out
}

func TestJournalInspect(t *testing.T) {
	all := lines(mustRun(t, "journal", "inspect", seedSample))
	sum := parseSummary(t, mustRun(t, "journal", "inspect", seedSample, "--summary"))
	if len(all) != sum.records {
		t.Fatalf("inspect printed %d lines; the summary says %d records", len(all), sum.records)
	}

	t.Run("every exchange", func(t *testing.T) {
		counts := map[string]int{}
		for _, l := range all {
			counts[apiOf(t, l)]++
		}
		if fmt.Sprint(counts) != fmt.Sprint(sum.apis) {
			t.Errorf("APIs of the lines %v; the summary says %v", counts, sum.apis)
		}
		// The seed is the demo: JoinGroup, SyncGroup, Heartbeat,
		// OffsetCommit and LeaveGroup of test_group_1 by consumers A and B.
		for _, api := range []string{"JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "LeaveGroup"} {
			if counts[api] == 0 {
				t.Errorf("no %s line", api)
			}
		}
	})

	t.Run("--api", func(t *testing.T) {
		got := lines(mustRun(t, "journal", "inspect", seedSample, "--api", "JoinGroup"))
		want := filterLines(all, func(l string) bool { return apiOf(t, l) == "JoinGroup" })
		if len(got) == 0 || !slices.Equal(got, want) {
			t.Fatalf("--api JoinGroup printed\n%s\nwant the JoinGroup lines of the whole journal:\n%s",
				strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		// Each consumer's first JoinGroup is answered MEMBER_ID_REQUIRED;
		// the others join generations 1, 2 and 3.
		var required int
		var gens []string
		member := regexp.MustCompile(` group="test_group_1" member="consumer-[AB]-[0-9a-f]+" (gen=(\d+)|error=MEMBER_ID_REQUIRED)$`)
		for _, l := range got {
			m := member.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("JoinGroup line %q lacks the group, member and generation or error", l)
			}
			if m[2] == "" {
				required++
			} else {
				gens = append(gens, m[2])
			}
		}
		slices.Sort(gens)
		if required != 2 || strings.Join(slices.Compact(gens), " ") != "1 2 3" {
			t.Errorf("%d MEMBER_ID_REQUIRED, generations %v; want 2, and generations 1 2 3", required, gens)
		}
		for _, alias := range []string{"joingroup", "11"} {
			if other := lines(mustRun(t, "journal", "inspect", seedSample, "--api", alias)); !slices.Equal(other, got) {
				t.Errorf("--api %s differs from --api JoinGroup", alias)
			}
		}
	})

	t.Run("--api unknown", func(t *testing.T) {
		out, _, err := runKproxySplit(t, "journal", "inspect", seedSample, "--api", "JoinGruop")
		if err == nil || !strings.Contains(err.Error(), `--api "JoinGruop"`) || !strings.Contains(err.Error(), "not an API name") || out != "" {
			t.Errorf("error %v, output %q; want the flag, the name and why", err, out)
		}
	})

	t.Run("--group", func(t *testing.T) {
		got := lines(mustRun(t, "journal", "inspect", seedSample, "--group", demo.Group))
		want := filterLines(all, func(l string) bool { return strings.Contains(l, ` group="`+demo.Group+`"`) })
		if len(got) != sum.groups[demo.Group] || !slices.Equal(got, want) {
			t.Errorf("--group %s printed %d lines; want the %d lines naming it (summary: %d)",
				demo.Group, len(got), len(want), sum.groups[demo.Group])
		}
		if len(got) == len(all) {
			t.Errorf("--group selected all %d exchanges; the journal has ApiVersions and Metadata too", len(all))
		}
		if out := mustRun(t, "journal", "inspect", seedSample, "--group", "no_such_group"); out != "" {
			t.Errorf("--group no_such_group printed %q; want nothing", out)
		}
	})

	t.Run("--group among several groups", func(t *testing.T) {
		dir := synthJournal(t)
		full := lines(mustRun(t, "journal", "inspect", dir))
		ssum := parseSummary(t, mustRun(t, "journal", "inspect", dir, "--summary"))
		if len(ssum.groups) != 3 {
			t.Fatalf("synthetic journal has groups %v; want 3", ssum.groups)
		}
		groupAttr := regexp.MustCompile(` group="([^"]*)"`)
		for g, n := range ssum.groups {
			got := lines(mustRun(t, "journal", "inspect", dir, "--group", g))
			want := filterLines(full, func(l string) bool { return strings.Contains(l, ` group="`+g+`"`) })
			if len(got) != n || !slices.Equal(got, want) {
				t.Errorf("--group %s printed %d lines; want the %d lines naming it (summary %d)", g, len(got), len(want), n)
			}
			for _, l := range got {
				for _, m := range groupAttr.FindAllStringSubmatch(l, -1) {
					if m[1] != g {
						t.Fatalf("--group %s printed a line naming group %s: %q", g, m[1], l)
					}
				}
			}
			both := lines(mustRun(t, "journal", "inspect", dir, "--group", g, "--api", "SyncGroup"))
			if want := filterLines(got, func(l string) bool { return apiOf(t, l) == "SyncGroup" }); len(both) == 0 || !slices.Equal(both, want) {
				t.Errorf("--group %s --api SyncGroup printed %d lines; want its %d SyncGroup lines", g, len(both), len(want))
			}
		}
	})

	t.Run("--raw", func(t *testing.T) {
		got := lines(mustRun(t, "journal", "inspect", seedSample, "--raw"))
		var exchanges int
		for i := 0; i < len(got); i++ {
			m := inspectLine.FindStringSubmatch(got[i])
			if m == nil {
				t.Fatalf("line %d %q is not an exchange line", i, got[i])
			}
			if got[i] != all[exchanges] {
				t.Fatalf("exchange line %q differs from the line without --raw %q", got[i], all[exchanges])
			}
			exchanges++
			version, _ := strconv.Atoi(m[3])
			corr, _ := strconv.Atoi(m[4])
			req := rawFrame(t, got, i+1, "  request  ")
			i++
			if len(req) < 8 || decode.APIName(int16(binary.BigEndian.Uint16(req))) != m[2] ||
				int(binary.BigEndian.Uint16(req[2:])) != version || int(int32(binary.BigEndian.Uint32(req[4:]))) != corr {
				t.Fatalf("request bytes %x do not start with %s v%d corr %d", req[:min(len(req), 8)], m[2], version, corr)
			}
			if m[5] == "no_response" {
				continue
			}
			resp := rawFrame(t, got, i+1, "  response ")
			i++
			if len(resp) < 4 || int(int32(binary.BigEndian.Uint32(resp))) != corr {
				t.Fatalf("response bytes %x do not start with corr %d", resp[:min(len(resp), 4)], corr)
			}
		}
		if exchanges != len(all) {
			t.Errorf("--raw printed %d exchanges; want %d", exchanges, len(all))
		}
	})

	t.Run("--summary", func(t *testing.T) {
		var total int
		for _, n := range sum.apis {
			total += n
		}
		if total != sum.records {
			t.Errorf("summary APIs add up to %d; records %d", total, sum.records)
		}
		first, _ := time.Parse(time.RFC3339Nano, inspectLine.FindStringSubmatch(all[0])[1])
		var last time.Time
		for _, l := range all {
			at, _ := time.Parse(time.RFC3339Nano, inspectLine.FindStringSubmatch(l)[1])
			first, last = minTime(first, at), maxTime(last, at)
		}
		for _, want := range []string{
			"files:            1 (",
			"kproxy (devel), started ",
			"dropped:          0 exchanges",
			"corrupt skipped:  0 records",
			fmt.Sprintf("time span:        %s .. %s", first.Format(inspectTime), last.Format(inspectTime)),
		} {
			if !strings.Contains(sum.text, want) {
				t.Errorf("summary lacks %q:\n%s", want, sum.text)
			}
		}
		if len(sum.groups) != 1 || sum.groups[demo.Group] == 0 || strings.Contains(sum.text, "torn tail") {
			t.Errorf("summary groups %v; want only %s, and no torn tail:\n%s", sum.groups, demo.Group, sum.text)
		}
		sel := parseSummary(t, mustRun(t, "journal", "inspect", seedSample, "--summary", "--api", "JoinGroup"))
		if sel.records != sum.records || sel.selected != sum.apis["JoinGroup"] || len(sel.apis) != 1 {
			t.Errorf("--summary --api JoinGroup: %d records, %d selected, apis %v; want %d, %d, JoinGroup only",
				sel.records, sel.selected, sel.apis, sum.records, sum.apis["JoinGroup"])
		}
	})
}

// rawFrame decodes the hex bytes on line i of ls, which must start with
// prefix.
func rawFrame(t *testing.T, ls []string, i int, prefix string) []byte {
	t.Helper()
	if i >= len(ls) || !strings.HasPrefix(ls[i], prefix) {
		t.Fatalf("line %d is not %q followed by hex", i, prefix)
	}
	b, err := hex.DecodeString(strings.TrimPrefix(ls[i], prefix))
	if err != nil {
		t.Fatalf("line %d: %v", i, err)
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// jsonlEntry is the part of a `replay --format jsonl` line these tests read.
type jsonlEntry struct {
	At         time.Time `json:"at"`
	Group      string    `json:"group"`
	Kind       string    `json:"kind"`
	Generation int32     `json:"generation"`
	Text       string    `json:"text"`
}

func parseJSONL(t *testing.T, out string) []jsonlEntry {
	t.Helper()
	var es []jsonlEntry
	for _, l := range lines(out) {
		var e jsonlEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("jsonl line %q: %v", l, err)
		}
		if e.At.IsZero() || e.Group == "" || e.Kind == "" || e.Text == "" {
			t.Fatalf("jsonl line %q lacks at, group, kind or text", l)
		}
		es = append(es, e)
	}
	return es
}

// entryLines are the first lines of the entries of a text replay: the
// lines that are not part of an indented summary block.
func entryLines(out string) []string {
	return filterLines(lines(out), func(l string) bool { return !strings.HasPrefix(l, " ") })
}

// plans lists the generations of test_group_1 whose plan entry is there.
func plans(es []jsonlEntry) []int32 {
	var gens []int32
	for _, e := range es {
		if e.Kind == "plan" && e.Group == demo.Group {
			gens = append(gens, e.Generation)
		}
	}
	return gens
}

func TestReplayFormats(t *testing.T) {
	text := mustRun(t, "replay", seedSample, "--format", "text")
	if def := mustRun(t, "replay", seedSample); def != text {
		t.Errorf("replay without --format differs from --format text")
	}
	jsonl := parseJSONL(t, mustRun(t, "replay", seedSample, "--format", "jsonl"))
	heads := entryLines(text)
	if len(heads) != len(jsonl) || len(heads) < 10 {
		t.Fatalf("text has %d entries, jsonl %d; want the same entries", len(heads), len(jsonl))
	}
	for i, e := range jsonl {
		want := e.At.UTC().Format("15:04:05.000") + " " + e.Group + " "
		if !strings.HasPrefix(heads[i], want) || !strings.Contains(heads[i], strings.SplitN(e.Text, "\n", 2)[0]) {
			t.Errorf("entry %d: text %q, jsonl %s %q", i, heads[i], want, e.Text)
		}
	}
	if got := plans(jsonl); fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("plans for generations %v; want [1 2 3]", got)
	}

	gens := seedGenerations(t, []byte(mustRun(t, "replay", seedSample, "--format", "json")))
	if len(gens) != 4 || gens[0].Generation != 1 || fmt.Sprint(gens[0].Members[0].Assignment[demo.Topic]) != "[0 1 2]" {
		t.Errorf("json generations %+v; want 1 to 4, A owning 0,1,2 in the first", gens)
	}
}

func TestReplayGroup(t *testing.T) {
	dir := synthJournal(t)
	all := parseJSONL(t, mustRun(t, "replay", dir, "--format", "jsonl"))
	allLines := lines(mustRun(t, "replay", dir, "--format", "jsonl"))
	var report struct {
		Groups []json.RawMessage `json:"groups"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "replay", dir, "--format", "json")), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Groups) != 3 {
		t.Fatalf("report has %d groups; want 3", len(report.Groups))
	}
	for i, raw := range report.Groups {
		var g struct {
			Group string `json:"group"`
		}
		json.Unmarshal(raw, &g)
		t.Run(g.Group, func(t *testing.T) {
			// jsonl: exactly the group's lines of the whole replay.
			var want []string
			for j, e := range all {
				if e.Group == g.Group {
					want = append(want, allLines[j])
				}
			}
			got := lines(mustRun(t, "replay", dir, "--format", "jsonl", "--group", g.Group))
			if len(got) == 0 || len(got) == len(allLines) || !slices.Equal(got, want) {
				t.Errorf("--group %s: %d jsonl lines; want its %d of %d", g.Group, len(got), len(want), len(allLines))
			}
			// text: the same entries, each naming the group.
			heads := entryLines(mustRun(t, "replay", dir, "--group", g.Group))
			for _, l := range heads {
				if f := strings.Fields(l); len(f) < 2 || f[1] != g.Group {
					t.Fatalf("--group %s printed %q", g.Group, l)
				}
			}
			if len(heads) != len(want) {
				t.Errorf("--group %s: %d text entries; want %d", g.Group, len(heads), len(want))
			}
			// json: the group's part of the whole report, alone.
			var one struct {
				Groups []json.RawMessage `json:"groups"`
			}
			if err := json.Unmarshal([]byte(mustRun(t, "replay", dir, "--format", "json", "--group", g.Group)), &one); err != nil {
				t.Fatal(err)
			}
			if len(one.Groups) != 1 || compact(t, one.Groups[0]) != compact(t, report.Groups[i]) {
				t.Errorf("--group %s --format json has %d groups, or differs from the group in the whole report", g.Group, len(one.Groups))
			}
		})
	}
	t.Run("no such group", func(t *testing.T) {
		if out := mustRun(t, "replay", dir, "--group", "nope"); out != "" {
			t.Errorf("text: %q; want nothing", out)
		}
		var r struct {
			Groups []json.RawMessage `json:"groups"`
		}
		if err := json.Unmarshal([]byte(mustRun(t, "replay", dir, "--group", "nope", "--format", "json")), &r); err != nil || r.Groups == nil || len(r.Groups) != 0 {
			t.Errorf("json: %v, groups %v; want an empty groups array", err, r.Groups)
		}
	})
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The seed journal's story: gen 1 forms at 15:07:56 (A alone), gen 2 at
// 15:08:00.98-15:08:01.50 (B joins), gen 3 at 15:08:09.5-15:08:10.5 (B
// leaves), A leaves at 15:08:11.5.
const seedMid = "2026-11-29T15:08:05Z" // between gen 2 and gen 3

func TestReplaySinceUntil(t *testing.T) {
	full := mustRun(t, "replay", seedSample)
	tests := []struct {
		name  string
		args  []string
		plans string // generations with a plan entry
		// prefix: the text output is the start of the full replay.
		prefix bool
		// partial: the first generation seen was formed before the window.
		partial bool
	}{
		{name: "until", args: []string{"--until", seedMid}, plans: "[1 2]", prefix: true},
		{name: "until, other zone", args: []string{"--until", "2026-11-29T16:08:05+01:00"}, plans: "[1 2]", prefix: true},
		{name: "since", args: []string{"--since", seedMid}, plans: "[3]", partial: true},
		{name: "since and until, date and time form", args: []string{"--since", "2026-11-29 15:08:00", "--until", seedMid}, plans: "[2]", partial: true},
		{name: "window without exchanges", args: []string{"--since", "2026-11-29T15:08:05Z", "--until", "2026-11-29T15:08:05.001Z"}, plans: "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := mustRun(t, append([]string{"replay", seedSample}, tt.args...)...)
			es := parseJSONL(t, mustRun(t, append([]string{"replay", seedSample, "--format", "jsonl"}, tt.args...)...))
			if got := fmt.Sprint(plans(es)); got != tt.plans {
				t.Errorf("plans for generations %s; want %s", got, tt.plans)
			}
			if tt.prefix && (len(text) >= len(full) || !strings.HasPrefix(full, text)) {
				t.Errorf("output is not a shorter start of the whole replay:\n%s", text)
			}
			if tt.partial != strings.Contains(text, "was first seen after its rebalance") {
				t.Errorf("partial visibility note present %v; want %v:\n%s", !tt.partial, tt.partial, text)
			}
			since, until := flagTime(t, tt.args, "--since"), flagTime(t, tt.args, "--until")
			for _, e := range es {
				if !until.IsZero() && e.At.After(until) {
					t.Errorf("entry at %s is after --until %s: %s", e.At, until, e.Text)
				}
				// An entry is dated by its exchange's request: allow the
				// longest wait in the seed, B's 517 ms JoinGroup.
				if !since.IsZero() && e.At.Before(since.Add(-time.Second)) {
					t.Errorf("entry at %s is before --since %s: %s", e.At, since, e.Text)
				}
			}
		})
	}
}

// flagTime is the time given to flag in args, as replay reads it.
func flagTime(t *testing.T, args []string, flag string) time.Time {
	t.Helper()
	i := slices.Index(args, flag)
	if i < 0 {
		return time.Time{}
	}
	at, err := parseReplayTime(flag, args[i+1])
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func TestReplayArgErrors(t *testing.T) {
	tests := []struct {
		args []string
		want []string // in the error
	}{
		{[]string{"--format", "xml"}, []string{`--format "xml"`, "want text, json, jsonl or html"}},
		{[]string{"--format", "JSON"}, []string{`--format "JSON"`, "want text, json, jsonl or html"}},
		{[]string{"--since", "yesterday"}, []string{`--since "yesterday"`, "RFC 3339"}},
		{[]string{"--until", "15:08"}, []string{`--until "15:08"`, "RFC 3339"}},
		{[]string{"--since", seedMid, "--until", "2026-11-29T15:08:00Z"}, []string{"--until 2026-11-29T15:08:00Z is before --since " + seedMid}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, err := runKproxySplit(t, append([]string{"replay", seedSample}, tt.args...)...)
			if err == nil {
				t.Fatalf("no error; output %q", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if out != "" || errOut != "" {
				t.Errorf("printed %q / %q before failing", out, errOut)
			}
		})
	}
}

// frame is one record of a segment: [start, end) in the file.
type frame struct{ start, end int }

// segmentFrames splits a segment into its records, following
// docs/journal-format.md: the header length is the big-endian uint16 at
// offset 10; each record is a 4-byte sync marker, a 4-byte payload length,
// a 4-byte CRC and the payload.
func segmentFrames(t *testing.T, seg []byte) []frame {
	t.Helper()
	marker := []byte{0xe2, 0x9c, 0x5b, 0xa7}
	var fs []frame
	for off := int(binary.BigEndian.Uint16(seg[10:])); off < len(seg); {
		if len(seg)-off < 12 || !bytes.Equal(seg[off:off+4], marker) {
			t.Fatalf("no record at offset %d", off)
		}
		end := off + 12 + int(binary.BigEndian.Uint32(seg[off+4:]))
		fs = append(fs, frame{off, end})
		off = end
	}
	return fs
}

// seedCopy writes data as the seed segment, under its own name, into a new
// directory and returns the file's path.
func seedCopy(t *testing.T, data []byte) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(seedSample, "*.kpj"))
	if err != nil || len(segs) != 1 {
		t.Fatalf("seed segments %v (%v); want one", segs, err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(segs[0]))
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDamagedJournal(t *testing.T) {
	segs, _ := filepath.Glob(filepath.Join(seedSample, "*.kpj"))
	if len(segs) != 1 {
		t.Fatalf("seed segments %v; want one", segs)
	}
	seg, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	fs := segmentFrames(t, seg)
	intact := lines(mustRun(t, "journal", "inspect", seedSample))
	if len(intact) != len(fs) {
		t.Fatalf("inspect shows %d exchanges; the segment has %d records", len(intact), len(fs))
	}
	// The record damaged: a SyncGroup past the first quarter of the file,
	// whose loss changes the story.
	k := slices.IndexFunc(intact[len(fs)/4:], func(l string) bool { return apiOf(t, l) == "SyncGroup" }) + len(fs)/4
	if k < len(fs)/4 {
		t.Fatalf("no SyncGroup in the seed past record %d", len(fs)/4)
	}
	rec := fs[k]

	// torn: the file ends in the middle of record k, as a writer killed
	// mid-write leaves it; cut: the file ends right before it; corrupt: a
	// byte in the middle of record k's payload is flipped; without: record
	// k is removed cleanly.
	torn := seedCopy(t, seg[:rec.start+(rec.end-rec.start)/2])
	cut := seedCopy(t, seg[:rec.start])
	flipped := slices.Clone(seg)
	flipped[rec.start+12+(rec.end-rec.start-12)/2] ^= 0xff
	corrupt := seedCopy(t, flipped)
	without := seedCopy(t, slices.Concat(seg[:rec.start], seg[rec.end:]))

	tornWarning := fmt.Sprintf("kproxy: warning: %s: torn tail at offset %d (a record cut short); the last %d bytes were ignored\n",
		torn, rec.start, (rec.end-rec.start)/2)
	corruptWarning := fmt.Sprintf("kproxy: warning: %s: corrupt record at offset %d (a checksum mismatch); %d bytes were skipped\n",
		corrupt, rec.start, rec.end-rec.start)

	t.Run("inspect torn", func(t *testing.T) {
		out, errOut, err := runKproxySplit(t, "journal", "inspect", torn)
		if err != nil {
			t.Fatal(err)
		}
		if got := lines(out); !slices.Equal(got, intact[:k]) {
			t.Errorf("printed %d exchanges; want the %d complete ones before the torn record, as in the intact journal", len(got), k)
		}
		if errOut != tornWarning {
			t.Errorf("stderr %q; want %q", errOut, tornWarning)
		}
		s := parseSummary(t, mustRun(t, "journal", "inspect", torn, "--summary"))
		if s.records != k || !strings.Contains(s.text, "torn tail:        "+strings.TrimPrefix(tornWarning, "kproxy: warning: ")) {
			t.Errorf("summary has %d records; want %d, and the torn tail:\n%s", s.records, k, s.text)
		}
	})

	t.Run("inspect corrupt", func(t *testing.T) {
		out, errOut, err := runKproxySplit(t, "journal", "inspect", corrupt)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Concat(intact[:k], intact[k+1:])
		if got := lines(out); !slices.Equal(got, want) {
			t.Errorf("printed %d exchanges; want the intact journal's %d but exchange %d", len(got), len(intact), k)
		}
		if errOut != corruptWarning {
			t.Errorf("stderr %q; want %q", errOut, corruptWarning)
		}
		s := parseSummary(t, mustRun(t, "journal", "inspect", corrupt, "--summary"))
		if s.records != len(fs)-1 || !strings.Contains(s.text, "corrupt skipped:  1 records") ||
			!strings.Contains(s.text, "corrupt record:   "+strings.TrimPrefix(corruptWarning, "kproxy: warning: ")) || strings.Contains(s.text, "torn tail") {
			t.Errorf("summary has %d records; want %d, one corrupt record with its place and no torn tail:\n%s", s.records, len(fs)-1, s.text)
		}
	})

	for _, format := range []string{"text", "jsonl", "json"} {
		t.Run("replay torn "+format, func(t *testing.T) {
			out, errOut, err := runKproxySplit(t, "replay", torn, "--format", format)
			if err != nil {
				t.Fatal(err)
			}
			// Every complete record is replayed: the story is that of the
			// file cut cleanly before the torn record.
			if want := mustRun(t, "replay", cut, "--format", format); out != want {
				t.Errorf("replay of the torn copy differs from the copy cut before the torn record:\n%s\nwant:\n%s", out, want)
			}
			if errOut != tornWarning {
				t.Errorf("stderr %q; want %q", errOut, tornWarning)
			}
		})
		t.Run("replay corrupt "+format, func(t *testing.T) {
			out, errOut, err := runKproxySplit(t, "replay", corrupt, "--format", format)
			if err != nil {
				t.Fatal(err)
			}
			// The damage costs that record only.
			if want := mustRun(t, "replay", without, "--format", format); out != want {
				t.Errorf("replay of the corrupt copy differs from the copy without the damaged record:\n%s\nwant:\n%s", out, want)
			}
			if whole := mustRun(t, "replay", seedSample, "--format", format); out == whole {
				t.Errorf("replay of the corrupt copy equals the intact replay; record %d should be missing", k)
			}
			if errOut != corruptWarning {
				t.Errorf("stderr %q; want %q", errOut, corruptWarning)
			}
		})
	}
}

// TestDemo runs `kproxy demo`'s body, shortened, with a journal, and checks
// that it tells the seed story: gen 1 gives A all of round_topic, a later
// generation gives B partition 2, A commits during the revocation, and the
// journal it wrote replays to the same facts.
func TestDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := runDemo(ctx, &out, &errOut, demoFlags{journal: dir, admin: "127.0.0.1:0"}, shortDemo); err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	text := out.String()
	gen1 := regexp.MustCompile(`(?m)^\S+ ` + demo.Group + ` gen 1 plan consumer-A-\S+ round_topic\[0 1 2\]`)
	genB := regexp.MustCompile(`(?m)^\S+ ` + demo.Group + ` gen (\d+) plan consumer-A-\S+ round_topic\[0 1\] \(-2\)\s+consumer-B-\S+ round_topic\[2\] \(\+2\)`)
	commit := regexp.MustCompile(`(?m)^\S+ ` + demo.Group + `\s+commit during revocation consumer-A-\S+ gen (\d+) round_topic\[\d\]=\d+`)
	g1 := gen1.FindStringIndex(text)
	gb := genB.FindStringSubmatchIndex(text)
	if g1 == nil || gb == nil || gb[0] < g1[0] {
		t.Fatalf("demo output lacks gen 1 giving A round_topic[0 1 2], then a plan giving A [0 1] and B [2]:\n%s", text)
	}
	if n, _ := strconv.Atoi(text[gb[2]:gb[3]]); n < 2 {
		t.Errorf("B's plan is in gen %d; want a later generation than 1", n)
	}
	if m := commit.FindStringSubmatch(text); m == nil {
		t.Errorf("demo output lacks A's commit during revocation:\n%s", text)
	}
	for _, want := range []string{"| ", "journal written to " + dir, "kproxy demo: web page at http://127.0.0.1:"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}

	// The journal replays, whole and clean, to the same facts.
	s := parseSummary(t, mustRun(t, "journal", "inspect", dir, "--summary"))
	if s.records == 0 || s.groups[demo.Group] == 0 || !strings.Contains(s.text, "corrupt skipped:  0 records") || strings.Contains(s.text, "torn tail") {
		t.Errorf("the demo's journal summary:\n%s\nwant records of %s, nothing corrupt or torn", s.text, demo.Group)
	}
	replayed := mustRun(t, "replay", dir)
	for _, re := range []*regexp.Regexp{gen1, genB, commit} {
		if !re.MatchString(replayed) {
			t.Errorf("replay of the demo's journal lacks %s:\n%s", re, replayed)
		}
	}
}
