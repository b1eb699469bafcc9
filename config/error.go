package config

import (
	"errors"
	"strconv"
)

// Error is one invalid setting: which key, the offending value, why, and
// (when Load knows it) where the value came from. Validate and Load return
// every Error they find, joined with errors.Join; errors.As finds the first.
type Error struct {
	// Key is the setting at fault ("listen"), or a sub-key of it
	// ("broker-listeners.1").
	Key   string
	Value string // "" when the value is missing or empty
	// Reason says what is wrong and, when it helps, what is wanted.
	Reason string
	// Source is where the value was set: "--listen", "KPROXY_LISTEN", the
	// config file's path, or "" when unknown (Validate) or the default.
	Source string
}

// Error reads like `config: listen "abc": missing port (from KPROXY_LISTEN)`.
func (e *Error) Error() string {
	s := "config: " + e.Key
	if e.Value != "" {
		s += " " + strconv.Quote(e.Value)
	}
	s += ": " + e.Reason
	if e.Source != "" {
		s += " (from " + e.Source + ")"
	}
	return s
}

// problems collects Errors in the order they are found.
type problems []*Error

func (p *problems) add(key, value, reason string) {
	*p = append(*p, &Error{Key: key, Value: value, Reason: reason})
}

// err joins the problems, or is nil when there are none.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	errs := make([]error, len(p))
	for i, e := range p {
		errs[i] = e
	}
	return errors.Join(errs...)
}
