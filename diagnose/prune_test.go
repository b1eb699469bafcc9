package diagnose

import (
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/pipeline"
)

// TestPruneForgetsSilentConnections: a fetch connection silent for longer
// than forgetAfter and a handover that never settled are forgotten as
// event time goes on, so that a long replay's memory stays flat.
func TestPruneForgetsSilentConnections(t *testing.T) {
	s := duplicateWindow()
	d := New(Config{})
	for _, it := range s.ordered() {
		if it.x != nil {
			d.AddDecoded(pipeline.NewDecoded(it.x, nil))
			continue
		}
		d.AddDecoded(&pipeline.Decoded{Events: []decode.Event{*it.ev}})
	}
	if len(d.conns) == 0 {
		t.Fatal("no connection remembered after the fetches")
	}
	d.groups["g"].handovers = append(d.groups["g"].handovers, &handover{at: sec(10)})
	d.Advance(sec(30 + 11*60))
	if len(d.conns) != 0 {
		t.Errorf("%d connections remembered 11 minutes after their last fetch; want 0", len(d.conns))
	}
	for _, h := range d.groups["g"].handovers {
		if !h.resumed {
			t.Errorf("an unsettled handover of %s is still remembered", h.at)
		}
	}
}
