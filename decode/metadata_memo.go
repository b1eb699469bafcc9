package decode

import "slices"

// Bounds of a metadataMemo: response bodies larger than memoMaxBody are
// not remembered, each is remembered with at most memoMaxRequests request
// bodies, and the memo forgets everything once it holds memoMaxEntries
// response bodies or memoMaxBytes bytes of bodies.
const (
	memoMaxBody     = 64 << 10
	memoMaxRequests = 4
	memoMaxEntries  = 8192
	memoMaxBytes    = 16 << 20
)

// metadataMemo remembers the Metadata decoded from recent Metadata
// exchanges, by version and response body, with the request bodies that
// came with it. Clients ask for the same topics again and again (every
// connection, every refresh) and get the same answer while the cluster
// does not change; decoding a Metadata exchange with kmsg costs an
// allocation per topic and partition, a lookup here none. The Metadata
// event depends on the response body alone, and whether the exchange
// decodes at all on the version and both bodies, with which it decoded
// before when the memo has them: so the result is the same.
type metadataMemo struct {
	byVer map[int16]map[string]*memoEntry // by version, then response body
	n     int
	bytes int
}

// memoEntry is the Metadata decoded from one response body, and the
// request bodies (up to memoMaxRequests, the latest) that came with it.
type memoEntry struct {
	md   *Metadata
	reqs []string
}

// get returns the Metadata remembered for an exchange of this version with
// these request and response bodies, or nil. It is the remembered one
// itself, not a copy: every hit's event shares it, and no one may modify
// it (see Event.Metadata; a copy per hit allocates for every client's
// refresh). The lookup
// hashes and compares the response body (no copy of it is made), then
// compares the request body with those remembered.
func (m *metadataMemo) get(version int16, req, resp []byte) *Metadata {
	e := m.byVer[version][string(resp)]
	if e == nil {
		return nil
	}
	for _, r := range e.reqs {
		if r == string(req) {
			return e.md
		}
	}
	return nil
}

// put remembers a copy of md (the event's own, which its caller may
// modify) as decoded from an exchange of this version
// with these request and response bodies.
func (m *metadataMemo) put(version int16, req, resp []byte, md *Metadata) {
	if md == nil || len(resp) > memoMaxBody || len(req) > memoMaxBody {
		return
	}
	if m.byVer == nil || m.n >= memoMaxEntries || m.bytes+len(req)+len(resp) > memoMaxBytes {
		m.byVer, m.n, m.bytes = map[int16]map[string]*memoEntry{}, 0, 0
	}
	bodies := m.byVer[version]
	if bodies == nil {
		bodies = map[string]*memoEntry{}
		m.byVer[version] = bodies
	}
	e := bodies[string(resp)]
	if e == nil {
		e = &memoEntry{md: &Metadata{Topics: slices.Clone(md.Topics)}}
		bodies[string(resp)] = e
		m.n++
		m.bytes += len(resp)
	}
	if len(e.reqs) == memoMaxRequests {
		e.reqs = slices.Delete(e.reqs, 0, 1) // the oldest goes
	}
	e.reqs = append(e.reqs, string(req))
	m.bytes += len(req)
}
