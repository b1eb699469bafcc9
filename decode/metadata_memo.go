package decode

import (
	"encoding/binary"
	"slices"
	"sync"
)

// Bounds of a metadataMemo: exchanges whose request and response bodies
// together are larger than memoMaxBody are not remembered, and the memo
// forgets everything once it holds memoMaxEntries exchanges or
// memoMaxBytes bytes of their bodies.
const (
	memoMaxBody    = 64 << 10
	memoMaxEntries = 8192
	memoMaxBytes   = 16 << 20
)

// metadataMemo remembers the Metadata decoded from recent Metadata
// exchanges, by version and request and response bodies. Clients ask for
// the same topics again and again (every connection, every refresh) and
// get the same answer while the cluster does not change; decoding a
// Metadata exchange with kmsg costs an allocation per topic and partition,
// a lookup here none. The Metadata event depends on the response body
// alone, and whether the exchange decodes at all on the version and both
// bodies, with which it decoded before when the memo has them: so the
// result is the same.
type metadataMemo struct {
	mu      sync.Mutex
	entries map[string]*Metadata // by key
	bytes   int
	key     []byte // reused by get and put
}

// setKey sets m.key to the key of an exchange: its version, its request
// body's length, its request body and its response body.
func (m *metadataMemo) setKey(version int16, req, resp []byte) {
	k := binary.BigEndian.AppendUint16(m.key[:0], uint16(version))
	k = binary.BigEndian.AppendUint32(k, uint32(len(req)))
	m.key = append(append(k, req...), resp...)
}

// get returns a copy of the Metadata remembered for an exchange of this
// version with these request and response bodies, or nil.
func (m *metadataMemo) get(version int16, req, resp []byte) *Metadata {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) == 0 {
		return nil
	}
	m.setKey(version, req, resp)
	md := m.entries[string(m.key)]
	if md == nil {
		return nil
	}
	return &Metadata{Topics: slices.Clone(md.Topics)}
}

// put remembers a copy of md as decoded from an exchange of this version
// with these request and response bodies.
func (m *metadataMemo) put(version int16, req, resp []byte, md *Metadata) {
	size := len(req) + len(resp)
	if md == nil || size > memoMaxBody {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil || len(m.entries) >= memoMaxEntries || m.bytes+size > memoMaxBytes {
		m.entries, m.bytes = map[string]*Metadata{}, 0
	}
	m.setKey(version, req, resp)
	m.entries[string(m.key)] = &Metadata{Topics: slices.Clone(md.Topics)}
	m.bytes += size
}
