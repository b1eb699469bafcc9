package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestMain runs the program itself when a test starts this test binary as
// -generator-process's child.
func TestMain(m *testing.M) {
	switch os.Getenv("KPROXY_JOURNALGEN_CHILD") {
	case "":
	case "fail":
		os.Exit(3) // a child that fails before it writes
	default:
		main()
		return
	}
	os.Exit(m.Run())
}

// TestGeneratorProcess runs the same -live twice, the generator in this
// process and in a child, and checks that the story is the same: the
// exchanges, generations and groups kept at each line, and the entries and
// findings counted.
func TestGeneratorProcess(t *testing.T) {
	t.Setenv("KPROXY_JOURNALGEN_CHILD", "1") // inherited by the child
	args := []string{"-live", "40m", "-live-every", "20m", "-groups", "8", "-members", "6", "-diagnosis",
		"-heartbeat", "30s", "-jobs", "3", "-seed", "7"}
	in, apart := liveStory(t, args), liveStory(t, append(args, "-generator-process"))
	if len(in) != 6 || strings.Join(in, "\n") != strings.Join(apart, "\n") {
		t.Errorf("in process:\n%s\nin a child process:\n%s", strings.Join(in, "\n"), strings.Join(apart, "\n"))
	}
}

// TestGeneratorProcessFails checks that a child that fails ends the run
// with an error saying so, not with lines of no traffic.
func TestGeneratorProcessFails(t *testing.T) {
	t.Setenv("KPROXY_JOURNALGEN_CHILD", "fail")
	var out bytes.Buffer
	err := run([]string{"-live", "20m", "-live-every", "20m", "-groups", "8", "-members", "6", "-generator-process"}, &out)
	if err == nil || !strings.Contains(err.Error(), "generator process: its stream ended") ||
		!strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("run: %v, want the stream's end and the child's exit status; printed:\n%s", err, out.String())
	}
}

// TestReadExchangesBroken checks that a stream from the generator's
// process that ends, breaks off or holds a payload that does not parse or
// is too long ends the reading with an error that is not io.EOF (which
// would end the run as if the traffic had), and no batch.
func TestReadExchangesBroken(t *testing.T) {
	for name, stream := range map[string][]byte{
		"ended":            {},
		"cut in a length":  {0, 0},
		"cut in a payload": {0, 0, 0, 9, 1, 0},
		"not a payload":    {0, 0, 0, 2, 7, 7},
		"too long":         {0xff, 0xff, 0xff, 0xff, 1},
	} {
		ch := make(chan []*decode.Exchange, 1)
		if err := readExchanges(context.Background(), bytes.NewReader(stream), ch); err == nil || errors.Is(err, io.EOF) || len(ch) != 0 {
			t.Errorf("%s: err %v, %d batches; want an error and none", name, err, len(ch))
		}
	}
}

// liveStory runs -live with args and returns, for each line, the traffic,
// exchanges, generations and groups kept, and the entries and findings
// lines: what does not depend on how fast the run went.
func liveStory(t *testing.T, args []string) []string {
	t.Helper()
	var out bytes.Buffer
	if err := run(args, &out); err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		switch f := strings.Fields(l); f[0] {
		case "memory:", "before", "the":
		case "entries:", "findings:":
			kept = append(kept, l)
		default:
			kept = append(kept, strings.Join(f[:4], " ")) // traffic, exchanges, generations, groups
		}
	}
	return kept
}
