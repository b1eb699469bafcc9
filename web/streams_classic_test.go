//go:build browser

package web

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kproxy-dev/kproxy/internal/headless"
)

// TestPageShowsClassicStreamsTasks loads the classic Kafka Streams group of
// the timeline's golden: the selected (latest) generation's members show
// their tasks next to their partitions, with what moved.
func TestPageShowsClassicStreamsTasks(t *testing.T) {
	r := readGolden(t, "streams_classic")
	br := headless.Start(t, headless.Options{})
	srv := httptest.NewServer(NewHandler(snapshotOf(r), NewRequestErrors(0, 0)))
	defer srv.Close()
	br.Run(t, 20*time.Second, chromedp.Navigate(srv.URL+"/groups/streams-classic"))
	br.WaitJS(t, "the members table", `document.querySelectorAll('#plan tr[data-member]').length == 2`, 10*time.Second)
	cells := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#plan tr[data-member] td.assignment')).map(c => c.innerText.replace(/\n/g, ' | '))`)
	want := []string{"input[0 1] | tasks 0_0 0_1 standby 0_2", "input[2] | tasks 0_2 (+0_2)"}
	if strings.Join(cells, "/") != strings.Join(want, "/") {
		t.Errorf("assignment cells %q; want %q", cells, want)
	}
	br.Screenshot(t, "testdata/out/streams-classic.png")
}
