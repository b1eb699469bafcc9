package timeline

import "time"

// Query selects part of a report, for readers that must not get a whole
// history at once (the admin API): some groups, what happened since a
// time, a page of groups at a time.
type Query struct {
	// Groups are the group ids wanted; none means every group.
	Groups []string
	// Since, when set, keeps the groups seen at or after it and, of them,
	// the generations and storms that reached it (those of unknown times
	// are kept).
	Since time.Time
	// After is where a page starts: the groups whose ids sort after it.
	After string
	// Limit is how many groups a page holds at most; 0 means no limit.
	Limit int
}

// Filter is the part of r that q selects, and the id to pass as
// Query.After for the next page ("" when this is the last). r is not
// modified; the result shares what it keeps with it. r's groups are in id
// order, as Engine.Report makes them.
func (q Query) Filter(r *Report) (*Report, string) {
	want := map[string]bool{}
	for _, id := range q.Groups {
		want[id] = true
	}
	var groups []*GroupReport
	for i := range r.Groups {
		gr := &r.Groups[i]
		if len(want) > 0 && !want[gr.Group] ||
			q.After != "" && gr.Group <= q.After || !q.Since.IsZero() && before(gr.LastSeen, q.Since) {
			continue
		}
		groups = append(groups, gr)
		if q.Limit > 0 && len(groups) > q.Limit {
			break // one more than a page: there is a next page
		}
	}
	return q.page(groups)
}

// Page is the part of ids, sorted and each once, that q's page holds:
// those q.Groups names (none: all) whose ids sort after q.After, at most
// q.Limit of them (0: no limit); and the id to pass as Query.After for the
// next page ("" when no id follows the page). For readers that page by
// group id what is not a Report (the findings, the journal's groups).
func (q Query) Page(ids []string) (page []string, next string) {
	want := map[string]bool{}
	for _, id := range q.Groups {
		want[id] = true
	}
	for _, id := range ids {
		if len(want) > 0 && !want[id] || q.After != "" && id <= q.After {
			continue
		}
		if q.Limit > 0 && len(page) == q.Limit {
			return page, page[len(page)-1]
		}
		page = append(page, id)
	}
	return page, ""
}

// page is the report of groups, those q selects in id order (at most one
// more than q.Limit, which says there is a next page), each trimmed to
// q.Since, and the id to pass as Query.After for the next page.
func (q Query) page(groups []*GroupReport) (*Report, string) {
	next := ""
	if q.Limit > 0 && len(groups) > q.Limit {
		groups, next = groups[:q.Limit], groups[q.Limit-1].Group
	}
	r := &Report{Groups: make([]GroupReport, 0, len(groups))}
	for _, gr := range groups {
		r.Groups = append(r.Groups, q.since(*gr))
	}
	return r, next
}

// since is gr without the generations and storms that ended before
// q.Since.
func (q Query) since(gr GroupReport) GroupReport {
	if q.Since.IsZero() {
		return gr
	}
	gens := make([]GenerationReport, 0, len(gr.Generations))
	for i, g := range gr.Generations {
		// A generation lasts until the next one starts.
		end := ""
		if i+1 < len(gr.Generations) {
			end = known(gr.Generations[i+1].StartedAt, gr.Generations[i+1].JoinCompletedAt, gr.Generations[i+1].StableAt)
		}
		if end == "" || !before(end, q.Since) {
			gens = append(gens, g)
		}
	}
	gr.Generations = gens
	storms := make([]StormReport, 0, len(gr.Storms))
	for _, st := range gr.Storms {
		if st.Ongoing || !before(st.To, q.Since) {
			storms = append(storms, st)
		}
	}
	gr.Storms = storms
	return gr
}

// known is the first of the times given that is known, or "".
func known(ts ...*string) string {
	for _, t := range ts {
		if t != nil {
			return *t
		}
	}
	return ""
}

// before reports whether the report time s is before t; a time that does
// not parse is not.
func before(s string, t time.Time) bool {
	at, err := time.Parse(time.RFC3339Nano, s)
	return err == nil && at.Before(t)
}
