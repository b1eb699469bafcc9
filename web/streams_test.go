//go:build browser

package web

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kproxy-dev/kproxy/internal/headless"
)

// TestPageShowsStreamsGroup loads the streams group of the timeline's
// golden (served, and from replay's HTML file): a lane per member with its
// active, standby and warm-up tasks over time, the members' tasks, the
// epochs with the tasks each moved, the status and the warm-ups.
func TestPageShowsStreamsGroup(t *testing.T) {
	r := readGolden(t, "streams")
	br := headless.Start(t, headless.Options{})
	for _, src := range pageSources(t, r) {
		t.Run(src.name, func(t *testing.T) {
			br.Run(t, 20*time.Second, chromedp.Navigate(src.base+src.sep+"groups/streams"))
			br.WaitJS(t, "the streams lanes", `document.querySelectorAll('#chart g.owned-seg[data-epoch]').length > 0`, 10*time.Second)
			// The lanes: B's segments, each kind of task its own row.
			segs := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#chart g.owned-seg')).map(g => g.getAttribute('data-epoch') + ' ' + g.getAttribute('data-partitions'))`)
			for _, want := range []string{"2 standby[0_1]", "2 warm-up[0_2 1_2]", "3 active[0_2 1_2]", "6 warm-up[1_0]", "7 active[0_0 0_1 0_2 1_0 1_1]", "4 active[1_1]"} {
				if !slices.Contains(segs, want) {
					t.Errorf("no lane segment %q among %q", want, segs)
				}
			}
			members := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#streams-members tr[data-member]')).map(r => Array.from(r.cells).slice(0, 6).map(c => c.textContent).join(' '))`)
			want := []string{"consumer-A active 7 0_0 0_1 0_2 1_0 1_1 none none", "consumer-B left 6 none none none", "consumer-C FENCED_MEMBER_EPOCH 4 none none none"}
			if strings.Join(members, "|") != strings.Join(want, "|") {
				t.Errorf("member rows %q; want %q", members, want)
			}
			moves := headless.Eval[string](t, br, `document.querySelector('#streams-epochs tr[data-epoch="3"] td.moves').innerText`)
			if moves != "0_2 active consumer-A → consumer-B (warm-up promoted)\n1_2 active consumer-A → consumer-B (warm-up promoted)" {
				t.Errorf("epoch 3's moves %q; want 0_2 and 1_2 from A to B, warm-ups promoted", moves)
			}
			if got := headless.Eval[string](t, br, `document.getElementById('streams-unassigned').textContent`); !strings.HasSuffix(got, "1_2") {
				t.Errorf("unassigned %q; want 1_2", got)
			}
			warm := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#streams-warmups tbody td:nth-child(4)')).map(c => c.textContent)`)
			if len(warm) != 3 || !strings.HasPrefix(warm[2], "ended unpromoted") {
				t.Errorf("warm-up outcomes %q; want two promoted, one ended unpromoted", warm)
			}
			br.Screenshot(t, "testdata/out/streams-"+src.name+".png")
		})
	}
}
