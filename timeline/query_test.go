package timeline

import (
	"slices"
	"testing"
)

// ids is the group ids of a report.
func ids(r *Report) []string {
	var out []string
	for _, g := range r.Groups {
		out = append(out, g.Group)
	}
	return out
}

func TestQueryFilter(t *testing.T) {
	e := New(Config{})
	for _, s := range []*script{twoMembers("a"), twoMembers("b"), rebalances("c", 3), twoMembers("d")} {
		for _, ev := range s.events() {
			e.Add(ev)
		}
	}
	full := e.Report()
	tests := []struct {
		name   string
		q      Query
		groups []string
		next   string
		cGens  []int32 // c's generations, when c is in the page
	}{
		{"everything", Query{}, []string{"a", "b", "c", "d"}, "", []int32{1, 2, 3, 4}},
		{"first page", Query{Limit: 2}, []string{"a", "b"}, "b", nil},
		{"second page", Query{Limit: 2, After: "b"}, []string{"c", "d"}, "", []int32{1, 2, 3, 4}},
		{"groups", Query{Groups: []string{"d", "c"}}, []string{"c", "d"}, "", []int32{1, 2, 3, 4}},
		// a, b and d are last seen at 10 s; c's gen 2 ended at 59.5 s.
		{"since", Query{Since: sec(60)}, []string{"c"}, "", []int32{3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, next := tt.q.Filter(full)
			if got := ids(r); !slices.Equal(got, tt.groups) || next != tt.next {
				t.Fatalf("groups %v, next %q; want %v, %q", got, next, tt.groups, tt.next)
			}
			if tt.cGens != nil {
				if got := gens(r, "c"); !slices.Equal(got, tt.cGens) {
					t.Errorf("c generations %v; want %v", got, tt.cGens)
				}
			}
		})
	}
	if got := gens(full, "c"); len(got) != 4 {
		t.Errorf("Filter changed the report: c has generations %v", got)
	}
}

// TestQueryPage: a page of ids holds the named ones after After, at most
// Limit, and names the next page only when an id follows.
func TestQueryPage(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	for _, tt := range []struct {
		name string
		q    Query
		page []string
		next string
	}{
		{"all", Query{}, ids, ""},
		{"first page", Query{Limit: 2}, []string{"a", "b"}, "b"},
		{"next page", Query{After: "b", Limit: 2}, []string{"c", "d"}, "d"},
		{"last page, full", Query{After: "c", Limit: 2}, []string{"d", "e"}, ""},
		{"named", Query{Groups: []string{"e", "b", "z"}, Limit: 1}, []string{"b"}, "b"},
		{"named, after", Query{Groups: []string{"e", "b"}, After: "b", Limit: 1}, []string{"e"}, ""},
		{"none after", Query{After: "e"}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			page, next := tt.q.Page(ids)
			if !slices.Equal(page, tt.page) || next != tt.next {
				t.Errorf("Page = %v, %q; want %v, %q", page, next, tt.page, tt.next)
			}
		})
	}
}
