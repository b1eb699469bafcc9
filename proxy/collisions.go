package proxy

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ListenerError lists the broker listeners kproxy cannot open as
// configured: each problem names the configuration keys involved. A
// listener that collides with another would either fail its clients or let
// them bypass kproxy, so serve refuses to start with one.
type ListenerError struct {
	Problems []string
}

func (e *ListenerError) Error() string {
	return "proxy: broker listeners: " + strings.Join(e.Problems, "; ")
}

// CheckListeners asks a seed broker for its nodes once, opens their
// listeners, and reports every one that collides with another address or
// cannot be opened, as a *ListenerError. When no seed answers it returns
// that error instead (not a *ListenerError): the listeners cannot be known
// yet, and Run keeps trying. Call it before Run, with a context bounding
// the wait. The listeners it opens accept connections at once; call Close
// instead of Run to give them up.
func (p *Proxy) CheckListeners(ctx context.Context) error {
	if _, err := p.discoverOnce(ctx); err != nil {
		return fmt.Errorf("proxy: broker discovery: %w", err)
	}
	if p.tls.sni != nil {
		// SNI routing serves every node on the bootstrap listener: there
		// are no node listeners to collide.
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var e ListenerError
	for id, n := range p.nodes {
		switch {
		case n.collides != "":
			e.Problems = append(e.Problems, n.collides)
		case n.ln == nil:
			e.Problems = append(e.Problems, fmt.Sprintf("node %d: %s %s: %v (a port in use)",
				id, p.nodeListenKey(id), n.listen, n.listenErr))
		}
	}
	if len(e.Problems) > 0 {
		return &e
	}
	return nil
}

// nodeListenKey is the configuration key that places a node's listener.
func (p *Proxy) nodeListenKey(nodeID int32) string {
	if _, ok := p.cfg.BrokerListeners[nodeID]; ok {
		return "broker-listeners." + strconv.Itoa(int(nodeID))
	}
	return "broker-port-base"
}

// collision says what the listener address of a node collides with, naming
// the configuration keys, or "" when nothing: the bootstrap listener, an
// address another part of kproxy listens on (Config.Reserved), or the
// broker's own address, which would send clients straight to the broker.
func (p *Proxy) collision(nodeID int32, listen, upstream string) string {
	port := portOf(listen)
	if port == 0 {
		return ""
	}
	key := p.nodeListenKey(nodeID)
	host := hostOf(listen)
	at := fmt.Sprintf("node %d: %s puts its listener on %s", nodeID, key, listen)
	if b := p.bootstrap.Addr().(*net.TCPAddr); int(port) == b.Port && sameHost(host, p.listenHost) {
		return at + ", the port of the bootstrap listener (listen)"
	}
	for other, addr := range p.cfg.Reserved {
		if portOf(addr) == port && sameHost(host, hostOf(addr)) {
			return at + ", the port of " + other + " (" + addr + ")"
		}
	}
	// The broker may be on another machine: only the same host, or
	// loopback on both sides, is surely the same socket.
	if uh := hostOf(upstream); upstream != "" && portOf(upstream) == port && (uh == host || loopback(uh) && (loopback(host) || wildcard(host))) {
		return at + ", the broker's own address (" + upstream + "): clients would bypass kproxy or loop"
	}
	return ""
}

// sameHost reports whether two listen or dial hosts can be the same
// interface: equal, either one every interface, or both loopback.
func sameHost(a, b string) bool {
	if a == b || wildcard(a) || wildcard(b) {
		return true
	}
	return loopback(a) && loopback(b)
}

func wildcard(h string) bool {
	ip := net.ParseIP(h)
	return h == "" || (ip != nil && ip.IsUnspecified())
}

func loopback(h string) bool {
	ip := net.ParseIP(h)
	return h == "localhost" || (ip != nil && ip.IsLoopback())
}

// Close closes the listeners of a Proxy that will not Run (CheckListeners
// refused its configuration, say). Run closes them itself.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closing = true
	p.bootstrap.Close()
	for _, n := range p.nodes {
		if n.ln != nil {
			n.ln.Close()
		}
	}
}
