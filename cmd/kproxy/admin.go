package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/capture"
	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/fleet"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
	"github.com/kproxy-dev/kproxy/timeline"
	"github.com/kproxy-dev/kproxy/web"
)

// adminServer is the admin HTTP server: /metrics (Prometheus, through
// client_golang), /healthz, /readyz, /timeline (the timeline so far, as
// text) and /api/timeline (the same as the JSON report), both filtered and
// paged (parsePageQuery), /api/diagnosis (the live findings, paged
// alike), and the web page (package web: /,
// /groups/{group}, /api/groups, /api/groups/{group}), which reads the live
// timeline's snapshot. It listens on loopback unless configured otherwise.
type adminServer struct {
	ln  net.Listener
	srv *http.Server
	log *zap.Logger
}

// adminSources are what the admin server reports on; each is called per
// request.
type adminSources struct {
	// proxy is nil without a proxy (kproxy capture); capture is the
	// packet capture kproxy capture reads, nil for serve and demo.
	proxy    func() proxy.Stats
	capture  func() capture.Stats
	pipeline func() pipeline.Stats
	journal  func() journal.Stats // nil when there is no journal
	// events and fleet are the events topic's publisher and the fleet
	// topic's reader (fleet-topic); nil when off.
	events func() fleet.PublisherStats
	fleet  func() fleet.SourceStats
	// timeline is the live timeline's latest snapshot: taking it never
	// waits for the pipeline.
	timeline func() *timeline.Snapshot
	history  historyConfig
	// apis counts the observed exchanges per API for /metrics; nil: none.
	apis *apiMetrics
	// groups are the per-group metrics for /metrics; nil: none.
	groups *groupMetrics
	// requestErrors are the failed group requests the web page draws; nil:
	// none.
	requestErrors *web.RequestErrors
	// diagnosis is a page of the live findings (diagnose.Live.FindingsPage);
	// nil: /api/diagnosis is not served.
	diagnosis func(timeline.Query) ([]diagnose.Finding, string)
	// groupFindings is one group's live findings, for the web page's
	// group view; nil: the page shows no findings.
	groupFindings func(group string) []diagnose.Finding
	// findingCounts is each group's live findings count and worst
	// severity, for the web page's group list; nil: the list shows none.
	findingCounts func() map[string]diagnose.FindingCount
	// warnings are shown by /healthz, one a line after "ok", each
	// prefixed "warning: ".
	warnings []string
	// ready is nil when kproxy can serve clients (proxy.Ready); nil
	// means always ready.
	ready func(ctx context.Context) error
	// access says who may read the server.
	access adminAccess
}

// readyTimeout bounds a /readyz probe's dials to the brokers.
const readyTimeout = 2 * time.Second

// newAdminServer opens the admin listener at addr, so that a busy port
// fails serve before the proxy starts.
func newAdminServer(addr string, src adminSources, log *zap.Logger) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: listen %s: %w", addr, err)
	}
	// The probes and /metrics answer at once; every other request waits
	// for its turn to render (limited): reading the timeline or the
	// findings costs CPU that client traffic needs. A scrape must never
	// wait behind another reader.
	probes, mux := http.NewServeMux(), http.NewServeMux()
	general := limited(make(turns, adminConcurrency), 0, mux)
	probes.Handle("/", general)
	probes.Handle("GET /metrics", promhttp.HandlerFor(newMetricsRegistry(src), promhttp.HandlerOpts{}))
	probes.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
		for _, warning := range src.warnings {
			fmt.Fprintln(w, "warning: "+warning)
		}
	})
	// /healthz is liveness: the process answers. /readyz is readiness:
	// every listener is up and a broker accepts connections.
	probes.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if src.ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := src.ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintln(w, "not ready:", err)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	h := &history{cfg: src.history}
	timelineHandler := func(contentType string, write func(io.Writer, *timeline.Report) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			q, err := parsePageQuery(r.URL.Query())
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			rep, next, status, err := h.report(r.Context(), src.timeline(), q, w.Header())
			if err != nil {
				http.Error(w, err.Error(), status)
				return
			}
			if next != "" {
				w.Header().Set("Link", "<"+nextPage(r.URL, next)+`>; rel="next"`)
			}
			serveRendered(w, log, contentType, func(b io.Writer) error { return write(b, rep) })
		}
	}
	// A timeline query that reaches back into the journal replays it:
	// seconds of CPU per GiB. It has a turn of its own, so that it holds
	// up no other reader, and a time limit (history.report).
	journalReads := make(turns, historyConcurrency)
	route := func(pattern string, hf http.HandlerFunc) {
		mux.Handle(pattern, hf)
		fromJournal := limited(journalReads, historyWait, hf)
		probes.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if h.readsJournal(src.timeline(), r.URL.Query()) {
				fromJournal.ServeHTTP(w, r)
				return
			}
			general.ServeHTTP(w, r)
		})
	}
	route("GET /api/timeline", timelineHandler("application/json", timeline.WriteJSON))
	route("GET /timeline", timelineHandler("text/plain; charset=utf-8", func(b io.Writer, r *timeline.Report) error {
		return timeline.WriteText(b, r, time.UTC)
	}))
	// The web page: /, /groups/{group}, /api/groups (with each group's
	// findings count, as the diagnosis keeps it), /api/groups/{group} (with its findings).
	web.NewHandler(src.timeline, src.requestErrors).WithFindings(src.groupFindings).WithCounts(src.findingCounts).Register(mux)
	if src.diagnosis != nil {
		mux.HandleFunc("GET /api/diagnosis", func(w http.ResponseWriter, r *http.Request) {
			q, err := parsePageQuery(r.URL.Query())
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fs, next := src.diagnosis(q)
			if next != "" {
				w.Header().Set("Link", "<"+nextPage(r.URL, next)+`>; rel="next"`)
			}
			serveRendered(w, log, "application/json", func(b io.Writer) error {
				return diagnose.WriteJSON(b, fs)
			})
		})
	}
	if beyondLoopback(ln.Addr()) && src.access.token == "" {
		log.Warn("the admin server listens beyond loopback without a token: whoever reaches it reads the timeline, "+
			"the group, member and client ids and the metrics; set --admin-token-file or KPROXY_ADMIN_TOKEN",
			zap.String("admin", ln.Addr().String()))
	}
	return &adminServer{
		ln: ln,
		srv: &http.Server{Handler: src.access.guard(probes), ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout: 30 * time.Second, WriteTimeout: adminWriteTimeout, IdleTimeout: 2 * time.Minute},
		log: log,
	}, nil
}

// beyondLoopback reports whether a listener's address takes connections
// from other hosts.
func beyondLoopback(addr net.Addr) bool {
	a, ok := addr.(*net.TCPAddr)
	return !ok || !a.IP.IsLoopback()
}

// adminWriteTimeout bounds the writing of an answer that does not set its
// own deadline (the probes, /metrics): a reader that stops reading holds
// only its connection, and that for this long.
const adminWriteTimeout = time.Minute

// adminConcurrency is how many admin requests (probes aside) are served
// at once; the others wait their turn. A reader of the API takes a core
// while it renders, and kproxy often runs on few, beside the clients or
// the broker: readers, however many, then take at most one from client
// traffic. (Envoy serves its admin API on one thread, for the same
// reason.) A request that replays the journal takes a turn of its own
// (historyConcurrency).
const adminConcurrency = 1

// turns are the turns of a limited handler: one slot per request that may
// render at once.
type turns chan struct{}

// limited serves h to as many requests at a time as t has turns; the
// others wait for a turn until their client gives up or, when wait is
// set, for wait at most (then 503). A turn covers rendering only: the
// answer is held (heldAnswer) and written once the turn is given back, so
// that a reader that does not read holds up no one else. It must then be
// read within writeDeadline.
func limited(t turns, wait time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held := &heldAnswer{header: w.Header()}
		var timeout <-chan time.Time
		if wait > 0 {
			timer := time.NewTimer(wait)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case t <- struct{}{}:
			h.ServeHTTP(held, r)
			<-t
		case <-timeout:
			http.Error(w, fmt.Sprintf("busy: another request has held its turn for %s; try again", wait), http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			return
		}
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeDeadline(held.body.Len())))
		w.Header().Set("Content-Length", strconv.Itoa(held.body.Len()))
		w.WriteHeader(held.status())
		w.Write(held.body.Bytes())
	})
}

// writeDeadline is how long a reader has to read an answer of n bytes: 30
// seconds, and a second more per MiB (a web page's largest group is tens of
// MiB).
func writeDeadline(n int) time.Duration {
	return 30*time.Second + time.Duration(n>>20)*time.Second
}

// heldAnswer is an http.ResponseWriter that keeps the answer to write it
// later.
type heldAnswer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (a *heldAnswer) Header() http.Header { return a.header }

func (a *heldAnswer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

func (a *heldAnswer) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(b)
}

func (a *heldAnswer) status() int {
	if a.code == 0 {
		return http.StatusOK
	}
	return a.code
}

// serveRendered renders into a buffer first, so that a rendering error is
// a 500 rather than half a document.
func serveRendered(w http.ResponseWriter, log *zap.Logger, contentType string, render func(io.Writer) error) {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		log.Error("admin: render timeline", zap.Error(err))
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	if _, err := w.Write(b.Bytes()); err != nil {
		log.Debug("admin: write timeline", zap.Error(err))
	}
}

// Addr is the address the admin server listens on.
func (a *adminServer) Addr() net.Addr { return a.ln.Addr() }

// serve serves until shutdown is called.
func (a *adminServer) serve() {
	base := "http://" + a.ln.Addr().String()
	a.log.Info("admin listening", zap.String("web", base+"/"), zap.String("metrics", base+"/metrics"), zap.String("timeline", base+"/timeline"))
	if err := a.srv.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.log.Error("admin server stopped", zap.Error(err))
	}
}

// shutdown stops the server, letting requests in progress finish for a
// short while.
func (a *adminServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := a.srv.Shutdown(ctx); err != nil {
		a.srv.Close()
	}
}
