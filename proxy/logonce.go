package proxy

import (
	"fmt"
	"sync"
)

// logOnce remembers which problems were logged, so that one repeating on
// every frame (a response that does not parse, say) is logged once and
// then only counted. Keys are a kind of problem and an api version, few
// from real clients; a client that cycles through versions (a fuzzer, an
// attacker) would make them many, so at most maxLogOnce are remembered
// and problems past them are only counted.
type logOnce struct {
	mu   sync.Mutex
	seen map[string]bool
}

// maxLogOnce bounds the problems logOnce remembers, and so the lines it
// lets through: real traffic has a few dozen (an api version newer than
// kproxy decodes, per api).
const maxLogOnce = 1024

// first reports whether the problem named by kind and key is seen for the
// first time, while fewer than maxLogOnce were.
func (o *logOnce) first(kind string, key ...any) bool {
	k := kind + fmt.Sprint(key...)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[k] || len(o.seen) >= maxLogOnce {
		return false
	}
	if o.seen == nil {
		o.seen = make(map[string]bool)
	}
	o.seen[k] = true
	return true
}
