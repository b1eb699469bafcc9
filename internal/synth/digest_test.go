package synth

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/digests.golden")

// digest is the SHA-256 of the first n exchanges of opts: every field a
// journal keeps.
func digest(opts Options, n int) string {
	tr := New(opts)
	h := sha256.New()
	var b []byte
	for range n {
		x := tr.Next()
		b = binary.BigEndian.AppendUint64(b[:0], x.ConnID)
		b = binary.BigEndian.AppendUint64(b, uint64(x.RequestAt.UnixNano()))
		b = binary.BigEndian.AppendUint64(b, uint64(x.ResponseAt.UnixNano()))
		b = binary.BigEndian.AppendUint32(b, uint32(x.BrokerID))
		b = append(b, x.ClientAddr...)
		b = append(b, x.ClientID...)
		b = append(b, x.Request...)
		b = append(b, x.Response...)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestDigests pins the traffic of the default settings: the replay
// output-equivalence goldens (cmd/kproxy) are generated from it, so the
// exchanges must not change when options are added. -update rewrites the
// golden.
func TestDigests(t *testing.T) {
	var got strings.Builder
	for _, c := range []struct {
		name string
		opts Options
		n    int
	}{
		{"realistic", Options{Seed: 1, Groups: 40, MaxMembers: 12, Mix: Realistic}, 60000},
		{"rebalance-heavy", Options{Seed: 2, Groups: 20, MaxMembers: 8, Mix: RebalanceHeavy}, 30000},
		{"realistic-defaults", Options{Seed: 3}, 60000},
		// As kproxy-journalgen -live runs it for serve's memory, smaller.
		{"live", Options{Seed: 4, Groups: 200, Heartbeat: 30 * time.Second, Jobs: 10}, 200000},
	} {
		fmt.Fprintf(&got, "%s %d %s\n", c.name, c.n, digest(c.opts, c.n))
	}
	path := filepath.Join("testdata", "digests.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("the default traffic changed:\ngot:\n%swant:\n%s", got.String(), want)
	}
}
