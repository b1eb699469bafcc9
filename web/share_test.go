//go:build browser

package web

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kproxy-dev/kproxy/internal/headless"
)

// TestPageShowsShareGroup loads the share group of the timeline's golden
// (served, and from replay's HTML file): its epochs drawn as lanes, its
// plan titled by epoch, and its records per member with the redeliveries.
func TestPageShowsShareGroup(t *testing.T) {
	r := readGolden(t, "share")
	br := headless.Start(t, headless.Options{})
	for _, src := range pageSources(t, r) {
		t.Run(src.name, func(t *testing.T) {
			br.Run(t, 20*time.Second, chromedp.Navigate(src.base+src.sep+"groups/share"))
			br.WaitJS(t, "the share lanes", `document.querySelectorAll('#chart g.owned-seg[data-epoch]').length > 0`, 10*time.Second)
			if got := headless.Eval[string](t, br, `document.getElementById('plan-title').textContent`); !strings.HasPrefix(got, "Epoch 4") {
				t.Errorf("plan title %q; want epoch 4", got)
			}
			rows := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#share-records tr[data-member], #share-records tr.total')).map(r => Array.from(r.cells).map(c => c.textContent).join(' '))`)
			// member, partition, acquired, redelivered, accepted, released, rejected, refused, unacknowledged
			want := []string{"consumer-A all 25 0 13 1 1 0 0", "consumer-B all 16 11 11 0 0 5 0", "consumer-C all 5 5 0 0 0 0 5", "group all 46 16 24 1 1 5 5"}
			if strings.Join(rows, "|") != strings.Join(want, "|") {
				t.Errorf("share record rows %q; want %q", rows, want)
			}
			red := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#share-redeliveries tbody td:nth-child(8)')).map(c => c.textContent)`)
			if len(red) != 2 || !strings.HasPrefix(red[0], "left at ") || red[1] != "lock expired" {
				t.Errorf("redeliveries' how %q; want left at ..., lock expired", red)
			}
			br.Screenshot(t, "testdata/out/share-"+src.name+".png")
		})
	}
}
