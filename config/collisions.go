package config

import (
	"fmt"
	"net"
	"sort"
	"strings"
)

// checkCollisions reports listeners configured on the same port of the same
// interface: the bootstrap listener (listen), the admin server (admin) and
// the broker listeners named by broker-listeners. Those placed by
// broker-port-base depend on the brokers' node ids: the proxy checks them
// at startup (proxy.CheckListeners).
func checkCollisions(p *problems, c *Config) {
	type listener struct{ key, addr string }
	ls := []listener{{KeyListen, c.Listen}}
	if c.Admin != "" {
		ls = append(ls, listener{KeyAdmin, c.Admin})
	}
	ids := make([]int, 0, len(c.BrokerListeners))
	for id := range c.BrokerListeners {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	for _, id := range ids {
		ls = append(ls, listener{fmt.Sprintf("%s.%d", KeyBrokerListeners, id), c.BrokerListeners[int32(id)]})
	}
	for i, a := range ls {
		for _, b := range ls[:i] {
			if strings.HasPrefix(b.key, KeyBrokerListeners) {
				continue // two broker listeners: checkBrokerListeners
			}
			if collide(a.addr, b.addr) {
				p.add(a.key, a.addr, fmt.Sprintf("same port as %s (%s)", b.key, b.addr))
				break
			}
		}
	}
}

// collide reports whether two listen addresses would take the same socket:
// the same non-zero port on the same host, or on every interface.
func collide(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	every := func(h string) bool { ip := net.ParseIP(h); return h == "" || ip != nil && ip.IsUnspecified() }
	return ha == hb || every(ha) || every(hb)
}
