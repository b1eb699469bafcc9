package proxy

import (
	"net"

	"go.uber.org/zap"
)

// fdReserve is how many file descriptors DefaultMaxConnections leaves for
// everything but client connections and their broker connections: the
// listeners, broker discovery, the journal's files, the admin server and
// its clients, the log.
const fdReserve = 256

// DefaultMaxConnections is the default of Config.MaxConnections, derived
// from the process's file-descriptor limit (RLIMIT_NOFILE, whose soft limit
// Go raises to the hard one at startup): each client connection takes two
// descriptors, its own and its broker connection's, and fdReserve are left
// for the rest, so that kproxy refuses connections before accept fails
// and the admin server keeps answering. It is at least 1; 65536 when the
// limit cannot be read or is unlimited.
func DefaultMaxConnections() int {
	limit, ok := fdLimit()
	if !ok {
		return 65536
	}
	return int(max(1, (limit-fdReserve)/2))
}

// admit registers c, unless a connection limit refuses it: it reports the
// limit that did (a config key), or "". Called with p.mu held.
func (p *Proxy) admit(c *conn) (refusedBy string) {
	if len(p.conns) >= p.cfg.MaxConnections {
		p.stats.connsRefused.Add(1)
		return "max connections"
	}
	if n := p.cfg.MaxConnectionsPerIP; n > 0 && p.perIP[c.clientIP] >= n {
		p.stats.connsRefusedPerIP.Add(1)
		return "max connections per ip"
	}
	p.conns[c] = struct{}{}
	p.perIP[c.clientIP]++
	return ""
}

// forget unregisters c.
func (p *Proxy) forget(c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	if p.perIP[c.clientIP]--; p.perIP[c.clientIP] <= 0 {
		delete(p.perIP, c.clientIP)
	}
}

// refuse closes a connection a limit refused, with a reset (a client
// retries it as it would a broker at its own max.connections), and logs
// it at most once a second per limit.
func (p *Proxy) refuse(c *conn, limit string) {
	resetOnClose(c.client)
	c.client.Close()
	p.rate.warn(c.log, "refused "+limit, "client connection refused: "+limit+" reached",
		zap.Int("max_connections", p.cfg.MaxConnections), zap.Int("max_connections_per_ip", p.cfg.MaxConnectionsPerIP))
}

// hostOf is the IP of a "host:port" address, or the address itself.
func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
