package decode

import "github.com/twmb/franz-go/pkg/kmsg"

// GenerationAnswer is what one JoinGroup or SyncGroup exchange says of its
// group's generation: the moment the coordinator answers every member of a
// generation at once.
type GenerationAnswer struct {
	Group string
	// Generation is the one the JoinGroup response gave (meaningful when
	// ErrorCode is 0), or the one the SyncGroup request named.
	Generation int32
	// ErrorCode is the response's error code.
	ErrorCode int16
}

// ReadGenerationAnswer reads the group, generation and error code of a
// JoinGroup or SyncGroup exchange that has its response. It needs no
// Decoder: it remembers nothing between exchanges and reads nothing else
// (no members, no embedded protocols), so that code outside the pipeline
// (the fleet merge, learning clock offsets) can read these facts while the
// pipeline's Decoder stays the only one. ok is false for other APIs, an
// exchange without a response, and frames the Decoder refuses (short,
// header not the Exchange's API, version or correlation id, a version
// above kmsg's, a body that does not read).
func ReadGenerationAnswer(x *Exchange) (a GenerationAnswer, ok bool) {
	if x == nil || x.Oversized || x.Response == nil ||
		(x.APIKey != int16(kmsg.JoinGroup) && x.APIKey != int16(kmsg.SyncGroup)) {
		return a, false
	}
	defer func() {
		// As in Decoder.DecodeAppend, a last guard: bad bytes must not
		// panic, and the fuzz target checks that they do not.
		if recover() != nil {
			a, ok = GenerationAnswer{}, false
		}
	}()
	h, _, err := parseRequestHeader(x.Request)
	if err != nil || h.APIKey != x.APIKey || h.APIVersion != x.APIVersion {
		return a, false
	}
	respBody, err := responseBody(h.APIKey, h, x.Response)
	if err != nil {
		return a, false
	}
	req := kmsg.RequestForKey(h.APIKey)
	if h.APIVersion < 0 || h.APIVersion > req.MaxVersion() {
		return a, false
	}
	req.SetVersion(h.APIVersion)
	resp := req.ResponseKind()
	resp.SetVersion(h.APIVersion)
	if req.ReadFrom(x.Request[h.Len:]) != nil || resp.ReadFrom(respBody) != nil {
		return a, false
	}
	switch q := req.(type) {
	case *kmsg.JoinGroupRequest:
		p := resp.(*kmsg.JoinGroupResponse)
		return GenerationAnswer{Group: q.Group, Generation: p.Generation, ErrorCode: p.ErrorCode}, true
	case *kmsg.SyncGroupRequest:
		p := resp.(*kmsg.SyncGroupResponse)
		return GenerationAnswer{Group: q.Group, Generation: q.Generation, ErrorCode: p.ErrorCode}, true
	}
	return a, false
}
