package timeline

import "github.com/kproxy-dev/kproxy/decode"

// memoSlots is the number of connections connMemos remembers at once: a
// fixed 4 MiB however many connections the proxy sees. On the 1 GiB
// synthetic journal (64,000 members, each with its coordinator
// connection), 98.6% of lookups hit.
const memoSlots = 1 << 15

// memoKeyLen is how many bytes of group id and member id a connMemo
// holds, enough for most clients' member ids (a Java consumer's is its
// client id and a UUID): a connMemo is two 64-byte cache lines.
const memoKeyLen = 102

// connMemo is what a connection's last heartbeat or commit resolved to:
// its group and the registry entry of the member it named. A consumer
// sends its heartbeats and commits to its coordinator on one connection,
// so the next one from that connection most likely names the same group
// and member, and the memo spares two map lookups, which miss the CPU
// caches when there are tens of thousands of members. The connection id
// is only a hint: a hit is checked against the event's group and member
// ids, so connections of several proxies sharing ids cost misses, never
// wrong answers. The ids are checked against a copy of their bytes in the
// memo when they fit (memoKeyLen), which spares two more cache misses.
type connMemo struct {
	conn uint64
	g    *group
	lm   *liveMember
	glen uint8            // len(g.id) when the ids fit key, else 0
	mlen uint8            // len(lm.id) when the ids fit key
	key  [memoKeyLen]byte // g.id then lm.id
}

// matches reports whether m resolves group and member.
func (m *connMemo) matches(group, member string) bool {
	if m.lm == nil || m.lm.forgotten {
		return false
	}
	if m.glen == 0 {
		return m.lm.id == member && m.g.id == group
	}
	n := int(m.glen)
	return string(m.key[:n]) == group && string(m.key[n:n+int(m.mlen)]) == member
}

// set makes m resolve g and lm for conn.
func (m *connMemo) set(conn uint64, g *group, lm *liveMember) {
	m.conn, m.g, m.lm, m.glen, m.mlen = conn, g, lm, 0, 0
	if len(g.id) > 0 && len(g.id)+len(lm.id) <= memoKeyLen {
		m.glen, m.mlen = uint8(len(g.id)), uint8(len(lm.id))
		copy(m.key[copy(m.key[:], g.id):], lm.id)
	}
}

// eventMemberID is the member id of a heartbeat or a commit, "" for any
// other event: the events that carry one and are frequent.
func eventMemberID(ev *decode.Event) string {
	switch {
	case ev.Heartbeat != nil:
		return ev.Heartbeat.MemberID
	case ev.OffsetCommit != nil:
		return ev.OffsetCommit.MemberID
	}
	return ""
}

// lookup returns the group ev names and, for a heartbeat or a commit,
// the registry entry of its member (nil when unknown), through the memo
// of ev's connection.
func (e *Engine) lookup(ev *decode.Event) (*group, *liveMember) {
	id := eventMemberID(ev)
	if id == "" {
		return e.group(ev.Group), nil
	}
	if e.memo == nil {
		e.memo = make([]connMemo, memoSlots)
	}
	m := &e.memo[ev.ConnID%memoSlots]
	if m.conn == ev.ConnID && m.matches(ev.Group, id) {
		return m.g, m.lm
	}
	g := e.group(ev.Group)
	lm := g.live[id]
	if lm != nil {
		m.set(ev.ConnID, g, lm)
	}
	return g, lm
}
