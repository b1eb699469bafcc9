package web

import (
	"slices"
	"sync"
	"time"

	"github.com/kproxy-dev/kproxy/timeline"
)

// Bounds of RequestErrors' memory.
const (
	// DefaultErrorsPerGroup is how many request errors RequestErrors keeps
	// per group: the latest.
	DefaultErrorsPerGroup = 200
	// DefaultErrorGroups is how many groups RequestErrors keeps errors
	// for; beyond it the group whose latest error is the oldest is
	// forgotten.
	DefaultErrorGroups = 10000
)

// RequestError is a failed group request the timeline named (a Heartbeat
// answered REBALANCE_IN_PROGRESS, a commit with ILLEGAL_GENERATION, a
// fenced static member, ...), drawn on the member's lane. The timeline
// names each member, API and error once per generation.
type RequestError struct {
	At         string `json:"at"`         // request time, RFC 3339 UTC
	Generation int32  `json:"generation"` // the group's generation at the time; 0 none
	MemberID   string `json:"memberId"`   // the member whose request failed
	API        string `json:"api"`        // "Heartbeat", "OffsetCommit", ...
	Error      string `json:"error"`      // the Kafka error name
	Text       string `json:"text"`       // the timeline's sentence
}

// RequestErrors keeps the latest request errors of each group from the
// timeline's entries. Record may be called from the timeline's goroutine
// while the admin server reads; the zero value is not usable, use
// NewRequestErrors.
type RequestErrors struct {
	mu       sync.Mutex
	perGroup int
	groups   int
	byGroup  map[string][]RequestError
	lastAt   map[string]time.Time
}

// NewRequestErrors keeps perGroup errors for each of at most groups groups
// (DefaultErrorsPerGroup and DefaultErrorGroups when 0).
func NewRequestErrors(perGroup, groups int) *RequestErrors {
	if perGroup <= 0 {
		perGroup = DefaultErrorsPerGroup
	}
	if groups <= 0 {
		groups = DefaultErrorGroups
	}
	return &RequestErrors{perGroup: perGroup, groups: groups,
		byGroup: map[string][]RequestError{}, lastAt: map[string]time.Time{}}
}

// Record keeps e if it names a failed request (kinds error and fenced);
// it ignores other entries, so that it can take every entry.
func (r *RequestErrors) Record(e timeline.Entry) {
	if e.Kind != timeline.KindError && e.Kind != timeline.KindFenced {
		return
	}
	re := RequestError{At: e.At.UTC().Format(time.RFC3339Nano), Generation: e.Generation, MemberID: e.Member, Text: e.Text}
	if e.Failure != nil {
		re.API, re.Error = e.Failure.API, e.Failure.Error
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list, known := r.byGroup[e.Group]
	if !known && len(r.byGroup) >= r.groups {
		r.forgetOldest()
	}
	if len(list) >= r.perGroup {
		list = slices.Delete(list, 0, len(list)-r.perGroup+1)
	}
	r.byGroup[e.Group] = append(list, re)
	if e.At.After(r.lastAt[e.Group]) {
		r.lastAt[e.Group] = e.At
	}
}

// forgetOldest drops the group whose latest error is the oldest.
func (r *RequestErrors) forgetOldest() {
	var oldest string
	var at time.Time
	for g, t := range r.lastAt {
		if oldest == "" || t.Before(at) {
			oldest, at = g, t
		}
	}
	delete(r.byGroup, oldest)
	delete(r.lastAt, oldest)
}

// Group is a copy of group's errors, oldest first; nil for a nil
// RequestErrors.
func (r *RequestErrors) Group(group string) []RequestError {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byGroup[group])
}
