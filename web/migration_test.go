//go:build browser

package web

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kproxy-dev/kproxy/internal/headless"
)

// TestPageShowsMigration loads the timeline's online-upgrade golden (a
// classic group joined by a consumer-protocol member, its classic members
// leaving one by one), served and from replay's HTML file: the list names
// the group's protocol, the group page says when the group changed type
// and shows each member's protocol, and a classic generation keeps its
// lanes beside the epochs.
func TestPageShowsMigration(t *testing.T) {
	r := readGolden(t, "migration")
	// The same group as it stood in epoch 2, the upgrade under way.
	mg := readGolden(t, "migration").Groups[0]
	mg.Group, mg.Generations, mg.Migrations[0].CompletedAt = "up-midway", mg.Generations[:2], nil
	r.Groups = append(r.Groups, mg)
	br := headless.Start(t, headless.Options{})
	for _, src := range pageSources(t, r) {
		t.Run(src.name, func(t *testing.T) {
			br.Run(t, 20*time.Second, chromedp.Navigate(src.base))
			br.WaitJS(t, "the group list", `document.querySelectorAll('#groups tbody tr').length === 2`, 10*time.Second)
			got := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#groups td.protocol')).map(c => c.textContent)`)
			if want := []string{"consumer", "consumer (2 classic, 1 consumer) · upgrade under way"}; strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("list protocols %q; want %q", got, want)
			}
			br.Run(t, 20*time.Second, chromedp.Navigate(src.base+src.sep+"groups/up"))
			br.WaitJS(t, "the plan", `document.getElementById('plan-title') !== null`, 10*time.Second)
			mig := headless.Eval[string](t, br, `document.getElementById('migrations').textContent`)
			for _, want := range []string{"online upgrade to the consumer protocol", "group type changed 14:02:10.000 at generation 1", "last classic member B-1 gone"} {
				if !strings.Contains(mig, want) {
					t.Errorf("migrations %q; want %q in it", mig, want)
				}
			}
			// Epoch 2, the mixed one: A-1 and B-1 classic, C consumer.
			headless.Eval[bool](t, br, `(() => { document.querySelector('#chart g.band[data-gen="2"] rect').dispatchEvent(new MouseEvent('click', {bubbles: true})); return true })()`)
			br.WaitJS(t, "epoch 2's plan", `document.getElementById('plan-title').getAttribute('data-gen') === '2'`, 10*time.Second)
			rows := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#plan tr[data-member]')).map(r => r.getAttribute('data-member') + ' ' + r.querySelector('td.protocol').textContent)`)
			if got, want := strings.Join(rows, "|"), "A-1 classic|B-1 classic|C consumer"; got != want {
				t.Errorf("epoch 2 member protocols %q; want %q", got, want)
			}
			if n := headless.Eval[int](t, br, `document.querySelectorAll('#chart g.band[data-gen="1"]').length`); n != 1 {
				t.Errorf("%d bands for the classic generation 1; want 1", n)
			}
			br.Screenshot(t, "testdata/out/migration-"+src.name+".png")
		})
	}
}
