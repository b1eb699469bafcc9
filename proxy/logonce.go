package proxy

import (
	"fmt"
	"sync"
)

// logOnce remembers which problems were logged, so that one repeating on
// every frame (a response that does not parse, say) is logged once and
// then only counted. Keys are few: a kind of problem and an api version.
type logOnce struct {
	mu   sync.Mutex
	seen map[string]bool
}

// first reports whether the problem named by kind and key is seen for the
// first time.
func (o *logOnce) first(kind string, key ...any) bool {
	k := kind + fmt.Sprint(key...)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[k] {
		return false
	}
	if o.seen == nil {
		o.seen = make(map[string]bool)
	}
	o.seen[k] = true
	return true
}
