package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"slices"

	"github.com/kproxy-dev/kproxy/timeline"
)

//go:embed assets
var assets embed.FS

// groupView is what /api/groups/{group} serves: the group's report with
// its request errors.
type groupView struct {
	*timeline.GroupReport
	RequestErrors []RequestError `json:"requestErrors"` // the latest failed requests; [] none
}

// Source gives the report the page shows; it is called once per request
// and must be safe to call from several goroutines.
type Source func() *timeline.Report

// Handler serves the page and its JSON:
//
//	GET /                   the group list
//	GET /groups/{group}     one group's timeline
//	GET /api/groups         []GroupSummary
//	GET /api/groups/{group} the group's timeline.GroupReport, plus
//	                        "requestErrors": []RequestError (404 unknown)
//	GET /assets/...         the page's script and style
//
// The page polls the JSON every two seconds, so a new generation appears
// without a reload.
type Handler struct {
	src  Source
	errs *RequestErrors
	mux  *http.ServeMux
}

// NewHandler is a Handler showing what src reports, and the request
// errors errs keeps (nil: none).
func NewHandler(src Source, errs *RequestErrors) *Handler {
	h := &Handler{src: src, errs: errs, mux: http.NewServeMux()}
	h.Register(h.mux)
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
	writeJSON(w, Summaries(h.src()))
}

func (h *Handler) group(w http.ResponseWriter, r *http.Request) {
	rep := h.src()
	id := r.PathValue("group")
	i, found := slices.BinarySearchFunc(rep.Groups, id, func(g timeline.GroupReport, id string) int {
		switch {
		case g.Group < id:
			return -1
		case g.Group > id:
			return 1
		}
		return 0
	})
	if !found {
		http.Error(w, "no group "+id+" in the timeline", http.StatusNotFound)
		return
	}
	writeJSON(w, h.view(&rep.Groups[i]))
}

// view is g with its request errors.
func (h *Handler) view(g *timeline.GroupReport) groupView {
	errs := h.errs.Group(g.Group)
	if errs == nil {
		errs = []RequestError{}
	}
	return groupView{GroupReport: g, RequestErrors: errs}
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
