package proxy

import (
	"net"
	"strconv"

	"go.uber.org/zap"
)

// node is a broker node kproxy learned from a response: where it really is
// and where kproxy listens for it.
type node struct {
	upstream string       // the broker's own "host:port"
	listen   string       // where kproxy listens for it
	ln       net.Listener // nil while listening fails
	port     int32        // the advertised port: bound, or intended while ln is nil
	failing  bool         // listening failed and was logged
	// listenErr is why listening failed last, while ln is nil.
	listenErr error
	// collides says what the listen address collides with (collision);
	// such a node is never listened for.
	collides string
}

var _ router = (*Proxy)(nil)

// route records a broker node's real address and returns the address
// clients must use for it, opening the node's listener the first time the
// node is seen. If the listener cannot be opened the intended address is
// still returned, so that clients never learn a broker's own address; the
// failure is logged and the listen retried on the next response naming
// the node. A node that has no valid listener port at all (refuseNode) is
// refused: ok is false. With SNI routing no node listener opens: the node
// is the pattern's host name at the bootstrap port.
func (p *Proxy) route(nodeID int32, upstream string) (host string, port int32, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.nodes[nodeID]
	if n == nil && p.tls.sni != nil {
		n = &node{}
		p.nodes[nodeID] = n
	}
	if n == nil {
		listen, ok := p.nodeListenAddr(nodeID)
		if !ok {
			p.refuseNode(nodeID, upstream)
			return "", 0, false
		}
		n = &node{listen: listen, port: portOf(listen)}
		p.nodes[nodeID] = n
		if why := p.collision(nodeID, listen, upstream); why != "" {
			n.collides = why
			p.log.Error("broker listener collides: clients told to use this node will fail or bypass kproxy; "+
				"fix the configuration", zap.Int32("broker_id", nodeID), zap.String("problem", why))
		}
	}
	if n.upstream != upstream {
		if n.upstream != "" {
			p.log.Info("broker node moved", zap.Int32("broker_id", nodeID), zap.String("from", n.upstream), zap.String("to", upstream))
		}
		n.upstream = upstream
	}
	if p.tls.sni != nil {
		// SNI routing: every node on the bootstrap listener, by name.
		return p.tls.sni.host(nodeID), p.bootstrapPort(), true
	}
	if n.ln == nil && n.collides == "" && !p.closing {
		p.listenNode(nodeID, n)
	}
	return p.advertise, n.port, true
}

// refuseNode counts a response naming a node that BrokerListeners does not
// list and whose port, BrokerPortBase plus its id, is not a TCP port (above
// 65535, or a negative id), and logs it once per node. Clients are not told
// about such a node rather than given a port that cannot work:
// rewriteBody leaves it out of Metadata and DescribeCluster responses and
// answers COORDINATOR_NOT_AVAILABLE for it in FindCoordinator, so the
// partitions it leads and the groups it coordinates fail in the client as
// unavailable. p.mu is held.
func (p *Proxy) refuseNode(nodeID int32, upstream string) {
	p.stats.nodesRefused.Add(1)
	if !p.once.first("node-port", nodeID) {
		return
	}
	p.log.Error("broker node id too large for the broker port base: its listener port would be above 65535, "+
		"so kproxy cannot serve it and does not tell clients about it (what it leads or coordinates is "+
		"unavailable through kproxy); give it a listener (broker-listeners) or lower the broker port base "+
		"(logged once per node)",
		zap.Int32("broker_id", nodeID), zap.String("upstream", upstream), zap.Int("broker_port_base", p.portBase),
		zap.Int64("port", int64(p.portBase)+int64(nodeID)))
}

// listenNode opens a node's listener and starts accepting on it. p.mu is
// held.
func (p *Proxy) listenNode(nodeID int32, n *node) {
	ln, err := net.Listen("tcp", n.listen)
	if err != nil {
		level := zap.ErrorLevel
		if n.failing {
			level = zap.DebugLevel
		}
		n.failing, n.listenErr = true, err
		p.log.Log(level, "cannot listen for broker node; clients told to use it will fail to connect",
			zap.Int32("broker_id", nodeID), zap.String("listen", n.listen), zap.String("upstream", n.upstream), zap.Error(err))
		return
	}
	n.ln, n.failing = ln, false
	n.port = int32(ln.Addr().(*net.TCPAddr).Port)
	p.log.Info("listening for broker node", zap.Int32("broker_id", nodeID), zap.Stringer("addr", ln.Addr()),
		zap.String("upstream", n.upstream), zap.String("advertised", net.JoinHostPort(p.advertise, strconv.Itoa(int(n.port)))))
	p.accepts.Add(1)
	p.pendingAccepts = append(p.pendingAccepts, pendingAccept{ln: ln, brokerID: nodeID})
	select {
	case p.acceptWake <- struct{}{}: // Run starts its accept loop
	default: // Run is already woken
	}
}

// bootstrapPort is the port the bootstrap listener is bound to.
func (p *Proxy) bootstrapPort() int32 { return int32(p.bootstrap.Addr().(*net.TCPAddr).Port) }

// nodeListenAddr is where kproxy listens for a node: BrokerListeners, else
// Listen's host at the port base plus the node id. ok is false when that is
// not a TCP port.
func (p *Proxy) nodeListenAddr(nodeID int32) (addr string, ok bool) {
	if addr, ok := p.cfg.BrokerListeners[nodeID]; ok {
		return addr, true
	}
	port := int64(p.portBase) + int64(nodeID)
	if nodeID < 0 || port > 65535 {
		return "", false
	}
	return net.JoinHostPort(p.listenHost, strconv.FormatInt(port, 10)), true
}

// portOf is the port of a listen address, which Config.validate checked or
// nodeListenAddr built; 0 if it has none.
func portOf(addr string) int32 {
	_, port, _ := net.SplitHostPort(addr)
	v, err := strconv.Atoi(port)
	if err != nil {
		return 0
	}
	return int32(v)
}

// upstreamOf returns a node's real address.
func (p *Proxy) upstreamOf(nodeID int32) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.nodes[nodeID]
	if n == nil || n.upstream == "" {
		return "", false
	}
	return n.upstream, true
}
