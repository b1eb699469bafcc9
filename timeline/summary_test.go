package timeline

import (
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestLongPartitionListsSummarised: a commit during revocation of many
// partitions is one short line listing the first few, then a count, in the
// text and in the log fields; the report keeps every partition.
func TestLongPartitionListsSummarised(t *testing.T) {
	tests := []struct {
		name       string
		partitions int
		wantMore   string
	}{
		{"few", maxListed, ""},
		{"hundred", 100, "… and 92 more partitions"},
		{"hundred_thousand", 100_000, "… and 99992 more partitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := client{"consumer-A", "10.0.0.1:5000"}, client{"consumer-B", "10.0.0.2:5000"}
			s := newScript("g")
			s.join(a, 0, 0.1, jg("A", 1, "A", "A"))
			s.sync(a, 0.2, 0.3, "A", 1, tp("t", 0), map[string][]decode.TopicPartitions{"A": tp("t", 0)})
			s.join(b, 10, -1, jg("B", 2, "A"))
			s.hb(a, 10.5, 10.51, "A", 1, errRebalanceInProgress)
			offsets := make(map[int32]int64, tt.partitions)
			for p := range int32(tt.partitions) {
				offsets[p] = int64(p) * 10
			}
			s.commit(a, 11, 11.01, "A", 1, "t", offsets, nil)
			entries, r, _ := run(t, Config{}, s.events(), 20)
			e := findEntry(entries, KindCommit, "")
			if e == nil {
				t.Fatalf("no commit entry\n%s", entryLines(entries))
			}
			if len(e.Text) > 400 {
				t.Errorf("commit line of %d bytes; want a short one: %.200s", len(e.Text), e.Text)
			}
			if tt.wantMore != "" && !strings.Contains(e.Text, tt.wantMore) {
				t.Errorf("commit line %q; want it to end with %q", e.Text, tt.wantMore)
			}
			enc := zapcore.NewMapObjectEncoder()
			for _, f := range e.ZapFields() {
				f.AddTo(enc)
			}
			more, _ := enc.Fields["offsets_more"].(int64)
			if want := int64(max(0, tt.partitions-maxListed)); more != want {
				t.Errorf("offsets_more %d; want %d", more, want)
			}
			var kept int
			for _, g := range r.Groups {
				commits := []CommitReport{}
				for _, gen := range g.Generations {
					commits = append(commits, gen.CommitsDuringRevocation...)
				}
				if g.PendingRebalance != nil {
					commits = append(commits, g.PendingRebalance.CommitsDuringRevocation...)
				}
				for _, c := range commits {
					kept += len(c.Offsets["t"])
				}
			}
			if kept != tt.partitions {
				t.Errorf("report keeps %d partitions of the commit; want all %d", kept, tt.partitions)
			}
		})
	}
}
