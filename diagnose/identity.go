package diagnose

import (
	"slices"
	"unique"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/unixnano"
)

// Who a finding's member is, as a person looks for it ("users don't know
// what a member ID is"): besides the ids and the address the timeline
// knows, the client software its connection announced (KIP-511), the rack
// it says it runs in, and the subject of the certificate it presented
// (mutual TLS). Software and certificate are facts of a connection, which
// the diagnosis keeps by client address (identConn, or connState once
// the connection fetches) and copies to a member
// at each of its requests (identify), so that the member keeps them once
// the connection is forgotten; the rack is the timeline's.

// connSeen notes exchange x on its connection: a connection the
// diagnosis keeps (it announced its software, fetched, or presented a
// certificate) is kept while it is busy, and its certificate subject is
// recorded.
func (e *Engine) connSeen(x *decode.Exchange) {
	if c := e.conns[x.ClientAddr]; c != nil {
		c.cert, c.last = x.ClientCert, later(c.last, x.RequestAt)
		return
	}
	b, ok := e.idents[x.ClientAddr]
	if !ok && x.ClientCert == "" {
		return
	}
	var id connIdent
	if ok {
		id = b.ident.Value()
	}
	if id.cert != x.ClientCert || !ok {
		id.cert = x.ClientCert
		b.ident = unique.Make(id)
	}
	b.last = max(b.last, unixnano.Of(x.RequestAt))
	e.idents[x.ClientAddr] = b
}

// use notes that the connection of ev sent a group request: what it said
// of itself is then kept as long as it is busy (forgetAfter).
func (e *Engine) use(ev *decode.Event) {
	if b, ok := e.idents[ev.ClientAddr]; ok && !b.used {
		b.used = true
		e.idents[ev.ClientAddr] = b
	}
}

// identify copies onto m what the connection of ev, a request of m's, said
// of itself. A LeaveGroup is left out: from v3 one request removes several
// members, and an admin client's names members of other clients.
func (e *Engine) identify(m *memberState, ev *decode.Event) {
	if m == nil || ev.LeaveGroup != nil {
		return
	}
	if c, ok := e.identOf(ev.ClientAddr); ok {
		m.learn(c)
	}
}

// name completes the members of f, a finding about to be handed out, with
// what is known of them beyond their ids: the member's record, else the
// connection at its address (a KIP-848 member's, whose requests the
// diagnosis does not follow one by one), and the timeline's rack. The
// members are copied first: f shares them with the finding kept, which
// readers of an earlier output may still hold.
func (e *Engine) name(f *Finding) {
	if len(f.Members) == 0 {
		return
	}
	f.Members = slices.Clone(f.Members)
	g := e.groups[f.Group]
	for i := range f.Members {
		mb := &f.Members[i]
		var sw decode.ClientSoftware
		var cert string
		if g != nil {
			if m := g.members[mb.MemberID]; m != nil {
				w := m.who()
				sw, cert = w.software, w.cert
			}
		}
		if c, ok := e.identOf(mb.ClientAddr); ok {
			if sw == (decode.ClientSoftware{}) {
				sw = c.software
			}
			if cert == "" {
				cert = c.cert
			}
		}
		if mb.SoftwareName == "" && mb.SoftwareVersion == "" {
			mb.SoftwareName, mb.SoftwareVersion = sw.Name, sw.Version
		}
		if mb.ClientCert == "" {
			mb.ClientCert = cert
		}
		if mb.Rack == "" {
			if facts, ok := e.tl.Member(f.Group, mb.MemberID); ok {
				mb.Rack = facts.Rack
			}
		}
	}
}
