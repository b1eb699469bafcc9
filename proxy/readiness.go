package proxy

import (
	"context"
	"errors"
	"fmt"
)

// Ready reports whether kproxy can serve clients now: it is running and
// not shutting down, every broker listener it should have is open, and at
// least one broker accepts a TCP connection (a seed, or a node learned
// since). nil means ready; otherwise the error says why not. ctx bounds
// the dials.
func (p *Proxy) Ready(ctx context.Context) error {
	p.mu.Lock()
	if !p.running || p.closing {
		p.mu.Unlock()
		return errors.New("proxy: not running")
	}
	addrs := append([]string(nil), p.cfg.Upstreams...)
	for id, n := range p.nodes {
		switch {
		case n.collides != "":
			p.mu.Unlock()
			return fmt.Errorf("proxy: %s", n.collides)
		case n.ln == nil:
			p.mu.Unlock()
			return fmt.Errorf("proxy: no listener for broker node %d (%s): %v", id, n.listen, n.listenErr)
		}
		if n.upstream != "" {
			addrs = append(addrs, n.upstream)
		}
	}
	p.mu.Unlock()
	var errs []error
	for _, addr := range addrs {
		nc, err := p.dial(ctx, addr)
		if err == nil {
			nc.Close()
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("proxy: no broker reachable: %w", errors.Join(errs...))
}
