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
// modified; the result shares what it keeps with it.
func (q Query) Filter(r *Report) (*Report, string) {
	groups := make([]*GroupReport, 0, len(r.Groups))
	want := map[string]bool{}
	for _, id := range q.Groups {
		want[id] = true
	}
	for i := range r.Groups {
		if len(want) == 0 || want[r.Groups[i].Group] {
			groups = append(groups, &r.Groups[i])
		}
	}
	return q.apply(groups)
}

// apply pages and filters groups, sorted by id.
func (q Query) apply(groups []*GroupReport) (*Report, string) {
	r := &Report{Groups: []GroupReport{}}
	for _, gr := range groups {
		if q.After != "" && gr.Group <= q.After {
			continue
		}
		if !q.Since.IsZero() && before(gr.LastSeen, q.Since) {
			continue
		}
		if q.Limit > 0 && len(r.Groups) == q.Limit {
			return r, r.Groups[len(r.Groups)-1].Group
		}
		r.Groups = append(r.Groups, q.since(*gr))
	}
	return r, ""
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
