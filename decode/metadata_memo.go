package decode

import (
	"hash/maphash"
	"slices"
)

// Bounds of a metadataMemo: response bodies larger than memoMaxBody are
// not remembered, each is remembered with at most memoMaxRequests request
// bodies, and the memo forgets everything once it has remembered
// memoMaxEntries response bodies or memoMaxBytes bytes of them (what the
// decoded Metadata of a body holds grows with the body).
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
// allocation per topic and partition, a lookup here none (journalgen's
// mix: 99.6% of Metadata exchanges are found). The Metadata event depends
// on the response body alone, and whether the exchange decodes at all on
// the version and both bodies, with which it decoded before when the memo
// has them: so the result is the same.
//
// Bodies are remembered by 128-bit digests, not kept: a response body is a
// kilobyte or more where its digest is 16 bytes, and the memo is read for
// the decoded Metadata alone. A digest is two hash/maphash sums of the
// body with seeds drawn at random for each process, so that two bodies
// share one by chance about once in 2^128 pairs. maphash does not claim to
// resist one who sets out to make two bodies collide; the bodies are the
// brokers' Metadata responses, not a client's. (SHA-256 would, at 10 times
// the cost of a lookup: BenchmarkDecodeMetadataRemembered.)
type metadataMemo struct {
	byVer map[int16]map[digest]*memoEntry // by version, then response body
	n     int
	bytes int
}

// digest is a body's two maphash sums (see metadataMemo).
type digest [2]uint64

// memoSeeds are the seeds of digests.
var memoSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// digestOf is b's digest.
func digestOf(b []byte) digest {
	return digest{maphash.Bytes(memoSeeds[0], b), maphash.Bytes(memoSeeds[1], b)}
}

// memoEntry is the Metadata decoded from one response body, and the
// digests of the request bodies (up to memoMaxRequests, the latest) that
// came with it.
type memoEntry struct {
	md   *Metadata
	reqs []digest
}

// get returns the Metadata remembered for an exchange of this version with
// these request and response bodies, or nil. It is the remembered one
// itself, not a copy: every hit's event shares it, and no one may modify
// it (see Event.Metadata; a copy per hit allocates for every client's
// refresh). The lookup digests the response body, and the request body
// when the response's is found.
func (m *metadataMemo) get(version int16, req, resp []byte) *Metadata {
	bodies := m.byVer[version]
	if bodies == nil {
		return nil
	}
	e := bodies[digestOf(resp)]
	if e == nil {
		return nil
	}
	if slices.Contains(e.reqs, digestOf(req)) {
		return e.md
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
	if m.byVer == nil || m.n >= memoMaxEntries || m.bytes+len(resp) > memoMaxBytes {
		m.byVer, m.n, m.bytes = map[int16]map[digest]*memoEntry{}, 0, 0
	}
	bodies := m.byVer[version]
	if bodies == nil {
		bodies = map[digest]*memoEntry{}
		m.byVer[version] = bodies
	}
	key := digestOf(resp)
	e := bodies[key]
	if e == nil {
		e = &memoEntry{md: &Metadata{Topics: slices.Clone(md.Topics)}}
		bodies[key] = e
		m.n++
		m.bytes += len(resp)
	}
	if len(e.reqs) == memoMaxRequests {
		e.reqs = slices.Delete(e.reqs, 0, 1) // the oldest goes
	}
	e.reqs = append(e.reqs, digestOf(req))
}
