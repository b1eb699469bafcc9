package timeline

import (
	"sync"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// Shared is an Engine behind a mutex, for a live proxy where the pipeline's
// goroutine adds events while another goroutine (an admin handler) asks for
// reports. Entries are delivered to Config.OnEntry under the mutex, on the
// goroutine calling AddEvents or Close.
type Shared struct {
	mu sync.Mutex
	e  *Engine
}

// NewShared returns a Shared engine with cfg (see Config).
func NewShared(cfg Config) *Shared {
	return &Shared{e: New(cfg)}
}

// AddEvents adds events (see Engine.AddEvents).
func (s *Shared) AddEvents(events []decode.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.e.AddEvents(events)
}

// Report builds the JSON document as of now.
func (s *Shared) Report() *Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e.Report()
}

// Close settles what is pending as of at (see Engine.Close).
func (s *Shared) Close(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.e.Close(at)
}
