package timeline

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestUnobservedReported: exchanges too large to observe are counted in the
// report, with their APIs and times, and said in the text report; they
// touch no group.
func TestUnobservedReported(t *testing.T) {
	evs := []decode.Event{
		{At: sec(1), APIKey: 11, Unobserved: &decode.Unobserved{}},
		{At: sec(5), RespondedAt: sec(5.1), APIKey: 8, Unobserved: &decode.Unobserved{RequestSeen: true}},
		{At: sec(7), APIKey: 11, Unobserved: &decode.Unobserved{}},
	}
	_, r, _ := run(t, Config{}, evs, 10)
	u := r.Unobserved
	if u == nil || u.Exchanges != 3 || strings.Join(u.APIs, ",") != "JoinGroup,OffsetCommit" ||
		u.First != stamp(sec(1)) || u.Last != stamp(sec(7)) || len(r.Groups) != 0 {
		t.Fatalf("report %+v, groups %d; want 3 exchanges of JoinGroup and OffsetCommit from 1 s to 7 s, no group", u, len(r.Groups))
	}
	var b bytes.Buffer
	if err := WriteText(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "3 group exchanges (JoinGroup, OffsetCommit) were too large to observe") {
		t.Errorf("text report %q; want the unobserved line", b.String())
	}
}
