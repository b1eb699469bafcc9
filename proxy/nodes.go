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
}

var _ router = (*Proxy)(nil)

// route records a broker node's real address and returns the address
// clients must use for it, opening the node's listener the first time the
// node is seen. If the listener cannot be opened the intended address is
// still returned, so that clients never learn a broker's own address; the
// failure is logged and the listen retried on the next response naming
// the node.
func (p *Proxy) route(nodeID int32, upstream string) (string, int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.nodes[nodeID]
	if n == nil {
		n = &node{listen: p.nodeListenAddr(nodeID)}
		if _, port, err := net.SplitHostPort(n.listen); err == nil {
			if v, err := strconv.Atoi(port); err == nil {
				n.port = int32(v)
			}
		}
		p.nodes[nodeID] = n
	}
	if n.upstream != upstream {
		if n.upstream != "" {
			p.log.Info("broker node moved", zap.Int32("broker_id", nodeID), zap.String("from", n.upstream), zap.String("to", upstream))
		}
		n.upstream = upstream
	}
	if n.ln == nil && !p.closing {
		p.listenNode(nodeID, n)
	}
	return p.advertise, n.port
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
		n.failing = true
		p.log.Log(level, "cannot listen for broker node; clients told to use it will fail to connect",
			zap.Int32("broker_id", nodeID), zap.String("listen", n.listen), zap.String("upstream", n.upstream), zap.Error(err))
		return
	}
	n.ln, n.failing = ln, false
	n.port = int32(ln.Addr().(*net.TCPAddr).Port)
	p.log.Info("listening for broker node", zap.Int32("broker_id", nodeID), zap.Stringer("addr", ln.Addr()),
		zap.String("upstream", n.upstream), zap.String("advertised", net.JoinHostPort(p.advertise, strconv.Itoa(int(n.port)))))
	p.accepts.Add(1)
	go p.acceptLoop(ln, nodeID)
}

// nodeListenAddr is where kproxy listens for a node: BrokerListeners, else
// Listen's host at the port base plus the node id.
func (p *Proxy) nodeListenAddr(nodeID int32) string {
	if addr, ok := p.cfg.BrokerListeners[nodeID]; ok {
		return addr
	}
	return net.JoinHostPort(p.listenHost, strconv.Itoa(p.portBase+int(nodeID)))
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
