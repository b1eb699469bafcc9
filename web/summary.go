package web

import "github.com/kproxy-dev/kproxy/timeline"

// GroupSummary is one row of the group list (see timeline.Summarize): a
// live snapshot keeps one per group, so that the list decodes no group.
type GroupSummary = timeline.GroupSummary

// Summaries is one GroupSummary per group of r, in r's order (by group id),
// for a page written from a whole report.
func Summaries(r *timeline.Report) []GroupSummary {
	out := make([]GroupSummary, 0, len(r.Groups))
	for i := range r.Groups {
		out = append(out, timeline.Summarize(&r.Groups[i]))
	}
	return out
}
