package decode

import (
	"slices"
	"sync"
)

// Bounds of a metadataMemo: bodies larger than memoMaxBody are not
// remembered, and the memo forgets everything once it holds memoMaxEntries
// bodies or memoMaxBytes bytes of them.
const (
	memoMaxBody    = 64 << 10
	memoMaxEntries = 8192
	memoMaxBytes   = 16 << 20
)

// metadataMemo remembers the Metadata decoded from recent Metadata response
// bodies, by version. Clients ask for the same topics again and again
// (every connection, every refresh) and get the same answer while the
// cluster does not change; decoding a Metadata response with kmsg costs
// an allocation per partition, a lookup here none. The Metadata event
// depends on the response body alone, so the result is the same.
type metadataMemo struct {
	mu    sync.Mutex
	byVer map[int16]map[string]*Metadata
	n     int
	bytes int
}

// get returns a copy of the Metadata remembered for body, or nil.
func (m *metadataMemo) get(version int16, body []byte) *Metadata {
	m.mu.Lock()
	defer m.mu.Unlock()
	md := m.byVer[version][string(body)]
	if md == nil {
		return nil
	}
	return &Metadata{Topics: slices.Clone(md.Topics)}
}

// put remembers a copy of md as decoded from body.
func (m *metadataMemo) put(version int16, body []byte, md *Metadata) {
	if md == nil || len(body) > memoMaxBody {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byVer == nil || m.n >= memoMaxEntries || m.bytes+len(body) > memoMaxBytes {
		m.byVer, m.n, m.bytes = map[int16]map[string]*Metadata{}, 0, 0
	}
	if m.byVer[version] == nil {
		m.byVer[version] = map[string]*Metadata{}
	}
	m.byVer[version][string(body)] = &Metadata{Topics: slices.Clone(md.Topics)}
	m.n++
	m.bytes += len(body)
}
