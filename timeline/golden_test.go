package timeline

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update after checking the change):\n--- got\n%s", path, got)
	}
}

// TestGolden renders chosen scenarios as text report, JSON report and
// JSONL entries, and compares them with the golden files.
func TestGolden(t *testing.T) {
	cases := []struct {
		name    string
		script  func() *script
		closeAt float64
	}{
		{"seed", seedScript, 30},
		{"cooperative", cooperativeScript, 20},
		{"kip848", kip848Script, 30},
		{"partial", partialScript, 40},
		{"eos", func() *script { return eosScript(0) }, 30},
		{"share", shareScript, 80},
		{"streams", streamsScript, 60},
		{"migration", upgradeScript, 40},
		{"streams_classic", classicStreamsScript, 70},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			entries, r, _ := run(t, Config{}, c.script().events(), c.closeAt)
			var text, js, jsonl, live bytes.Buffer
			if err := WriteText(&text, r, nil); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if err := WriteEntryJSONL(&jsonl, e); err != nil {
					t.Fatal(err)
				}
				if err := WriteEntryText(&live, e); err != nil {
					t.Fatal(err)
				}
			}
			golden(t, c.name+".txt", text.Bytes())
			golden(t, c.name+".json", js.Bytes())
			golden(t, c.name+".jsonl", jsonl.Bytes())
			golden(t, c.name+".live.txt", live.Bytes())
		})
	}
}

// TestIndentIsValidJSON checks that the indenter keeps the document equal
// to what encoding/json produced, including strings with brackets.
func TestIndentIsValidJSON(t *testing.T) {
	r := &Report{Groups: []GroupReport{{Group: `g "[x]", {y}`, Unknown: []UnknownReport{{What: "a", Why: `b\"[`}}}}}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("indented JSON does not parse: %v\n%s", err, b.String())
	}
	if back.Groups[0].Group != r.Groups[0].Group || back.Groups[0].Unknown[0].Why != `b\"[` {
		t.Errorf("round trip changed strings: %+v", back.Groups[0])
	}
}
