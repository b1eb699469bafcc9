package proxy

import (
	"time"

	"go.uber.org/zap"
)

// defaultDropLogEvery bounds how often exchanges dropped from the observer
// queue are logged.
const defaultDropLogEvery = 5 * time.Second

// reportDrops logs, at most every dropLogEvery, how many exchanges were
// dropped from the observer queue since the previous line, until stop is
// closed. It runs on its own goroutine: the Queue's reader may be the one
// stuck, and the traffic path must not log per drop.
func (p *Proxy) reportDrops(stop <-chan struct{}) {
	t := time.NewTicker(p.dropLogEvery)
	defer t.Stop()
	var logged uint64
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		d := p.stats.observerDrops.Load()
		if d == logged {
			continue
		}
		p.log.Warn("observer queue full: exchanges dropped; traffic is still forwarded, but observers miss them "+
			"(the timeline; a journal notes each gap)",
			zap.Uint64("dropped", d-logged), zap.Uint64("dropped_total", d), zap.Duration("interval", p.dropLogEvery))
		logged = d
	}
}
