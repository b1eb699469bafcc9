package web

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/timeline"
)

//go:embed assets
var assets embed.FS

// groupView is what /api/groups/{group} serves: the group's report with
// its request errors, and from when its history is whole.
type groupView struct {
	*timeline.GroupReport
	groupExtra
}

// groupExtra is what a group's view adds to its report.
type groupExtra struct {
	RequestErrors []RequestError `json:"requestErrors"` // the latest failed requests; [] none
	// HistoryFrom is the time from which the history kept is whole
	// (timeline.Snapshot.Horizon): retention dropped what came before.
	// Absent when nothing was dropped.
	HistoryFrom string `json:"historyFrom,omitempty"`
	// Findings are the group's diagnosis findings (diagnose.Finding);
	// [] none. Absent (nil) when the page has no diagnosis.
	Findings *[]diagnose.Finding `json:"findings,omitempty"`
}

// Findings gives one group's findings (a diagnose.Live's GroupFindings);
// it is called once per request for a group's view and must be safe to
// call from several goroutines.
type Findings func(group string) []diagnose.Finding

// Counts gives, by group, the count and worst severity of its findings
// (a diagnose.Live's Counts: kept up to date as the diagnosis publishes,
// nothing decoded), for the group list; groups without findings may be
// left out. It is called once per request for the list, must be cheap and
// safe to call from several goroutines, and the map it returns is the
// caller's.
type Counts func() map[string]diagnose.FindingCount

// GroupRow is one row of the group list (GET /api/groups): the group at a
// glance and, with a diagnosis, how many findings it has and the worst.
type GroupRow struct {
	GroupSummary
	// Findings is the number of the group's findings; absent (nil) when
	// the page has no diagnosis.
	Findings *int `json:"findings,omitempty"`
	// WorstSeverity is the most urgent severity among them (critical,
	// warning, info); absent when there is none.
	WorstSeverity diagnose.Severity `json:"worstSeverity,omitempty"`
}

// rows are the list's rows: sums with the counts (nil: no diagnosis).
func rows(sums []GroupSummary, counts map[string]diagnose.FindingCount) []GroupRow {
	out := make([]GroupRow, len(sums))
	for i, s := range sums {
		out[i].GroupSummary = s
		if counts != nil {
			c := counts[s.Group]
			out[i].Findings, out[i].WorstSeverity = &c.N, c.Worst
		}
	}
	return out
}

// Source gives the snapshot the page shows (a timeline.Live's Snapshot);
// it is called once per request and must be safe to call from several
// goroutines. It must not wait for the timeline: the page's polls would
// slow the pipeline down.
type Source func() *timeline.Snapshot

// Handler serves the page and its JSON:
//
//	GET /                   the group list
//	GET /groups/{group}     one group's timeline
//	GET /api/groups         []GroupRow: the summaries and, with a
//	                        diagnosis (WithCounts), each group's
//	                        findings count and worst severity
//	GET /api/groups/{group} the group's timeline.GroupReport, plus
//	                        "requestErrors": []RequestError and
//	                        "historyFrom" and, with a diagnosis
//	                        (WithFindings), "findings" (404 unknown)
//	GET /assets/...         the page's script and style
//
// The page polls the JSON every two seconds, so a new generation appears
// without a reload. The list is the summaries the snapshot keeps (no
// report is rendered); a group's page has that group's report rendered
// (timeline.Snapshot.GroupJSON: by the timeline's owner, live). When
// retention has dropped history, both carry the Kproxy-History-From
// header, as the admin API does.
type Handler struct {
	src      Source
	errs     *RequestErrors
	findings Findings // nil: no diagnosis
	counts   Counts   // nil: no findings count on the list
	mux      *http.ServeMux
}

// NewHandler is a Handler showing what src reports, and the request
// errors errs keeps (nil: none).
func NewHandler(src Source, errs *RequestErrors) *Handler {
	h := &Handler{src: src, errs: errs, mux: http.NewServeMux()}
	h.Register(h.mux)
	return h
}

// WithFindings makes h's group views carry the findings f gives; it
// returns h.
func (h *Handler) WithFindings(f Findings) *Handler {
	h.findings = f
	return h
}

// WithCounts makes h's group list carry each group's findings count and
// worst severity, as counts gives them; it returns h.
func (h *Handler) WithCounts(counts Counts) *Handler {
	h.counts = counts
	return h
}

// Register adds the page's routes to mux (an admin server's), so that
// they sit next to its other routes.
func (h *Handler) Register(mux *http.ServeMux) {
	sub, _ := fs.Sub(assets, "assets") // "assets" is embedded above: cannot fail
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(sub)))
	mux.HandleFunc("GET /{$}", h.page)
	mux.HandleFunc("GET /groups/{group}", h.page)
	mux.HandleFunc("GET /api/groups", h.groups)
	mux.HandleFunc("GET /api/groups/{group}", h.group)
}

// ServeHTTP serves the routes Register lists.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(shell(nil))
}

func (h *Handler) groups(w http.ResponseWriter, r *http.Request) {
	snap := h.src()
	setHistoryFrom(w, snap)
	var counts map[string]diagnose.FindingCount
	if h.counts != nil {
		counts = h.counts()
	}
	writeJSON(w, rows(snap.Summaries(), counts))
}

func (h *Handler) group(w http.ResponseWriter, r *http.Request) {
	snap := h.src()
	id := r.PathValue("group")
	report, found, err := snap.GroupJSON(r.Context(), id)
	if err != nil {
		renderFailed(w, err)
		return
	}
	if !found {
		http.Error(w, "no group "+id+" in the timeline", http.StatusNotFound)
		return
	}
	setHistoryFrom(w, snap)
	extra, err := json.Marshal(groupExtra{RequestErrors: h.requestErrors(id), HistoryFrom: historyFrom(snap), Findings: h.groupFindings(id)})
	if err != nil {
		http.Error(w, "web: encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	// The report comes as JSON: the view is that object with extra's
	// fields added, as encoding groupView would write it, without decoding
	// a report that may be tens of megabytes.
	body := append(report[:len(report)-1], ',') // without its closing brace
	body = append(body, extra[1:]...)
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(body)
}

// renderFailed answers a request whose report the timeline's owner did
// not render: 503 when it did not come to it in time (the pipeline is
// busy), nothing when the reader has gone.
func renderFailed(w http.ResponseWriter, err error) {
	if errors.Is(err, context.DeadlineExceeded) {
		http.Error(w, fmt.Sprintf("busy: the pipeline did not render the report within %s; try again", timeline.RenderWait), http.StatusServiceUnavailable)
		return
	}
	http.Error(w, err.Error(), http.StatusServiceUnavailable) // the reader has gone
}

// historyFrom is snap's horizon in RFC 3339, or "" when nothing was
// dropped.
func historyFrom(snap *timeline.Snapshot) string {
	if snap.Horizon.IsZero() {
		return ""
	}
	return snap.Horizon.UTC().Format(time.RFC3339Nano)
}

// setHistoryFrom sets the Kproxy-History-From header when retention has
// dropped history.
func setHistoryFrom(w http.ResponseWriter, snap *timeline.Snapshot) {
	if from := historyFrom(snap); from != "" {
		w.Header().Set("Kproxy-History-From", from)
	}
}

// view is g with its request errors.
func (h *Handler) view(g *timeline.GroupReport) groupView {
	return groupView{GroupReport: g, groupExtra: groupExtra{RequestErrors: h.requestErrors(g.Group), Findings: h.groupFindings(g.Group)}}
}

// groupFindings are the findings of group; nil when h has no diagnosis,
// [] when the group has none.
func (h *Handler) groupFindings(group string) *[]diagnose.Finding {
	if h.findings == nil {
		return nil
	}
	fs := h.findings(group)
	if fs == nil {
		fs = []diagnose.Finding{}
	}
	return &fs
}

// requestErrors are the request errors of group; [] none.
func (h *Handler) requestErrors(group string) []RequestError {
	errs := h.errs.Group(group)
	if errs == nil {
		errs = []RequestError{}
	}
	return errs
}

// writeJSON encodes v whole before writing, so that an encoding error is a
// 500 rather than half a document.
func writeJSON(w http.ResponseWriter, v any) {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		http.Error(w, "web: encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}
