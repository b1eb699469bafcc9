package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/fleet"
	"github.com/kproxy-dev/kproxy/internal/gcconfig"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
	"github.com/kproxy-dev/kproxy/story"
	"github.com/kproxy-dev/kproxy/timeline"
	"github.com/kproxy-dev/kproxy/web"
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve --upstream HOST:PORT[,HOST:PORT] [--listen HOST:PORT] [flags]",
		Short: "Run the proxy in front of a Kafka cluster",
		Long: `serve runs kproxy in front of the brokers named by --upstream. Clients are
seeded with --listen; kproxy opens one more listener per broker and rewrites
the addresses brokers announce so that clients only ever dial kproxy.

Every setting can also come from a KPROXY_* environment variable or from
the file named by --config (its keys are the flag names). A flag wins over
the environment, which wins over the file, which wins over the default.
broker-listeners (file only, or KPROXY_BROKER_LISTENERS=ID=HOST:PORT,...)
names the listener of given broker node ids.

The timeline of every consumer group is logged as it happens (logger
"timeline") and served by the admin server at /timeline (text) and
/api/timeline (JSON), filtered and paged: ?group=G (repeatable),
?since=TIME, ?limit=N groups (default 100) and ?after=GROUP for the next
page (the Link header names it). Memory holds what --timeline-retain keeps;
with --journal DIR, a ?since= older than that is told again from the
journal. --journal DIR records the exchanges kproxy observes, for kproxy
replay. --events-topic NAME publishes them to a topic of the cluster (or of
--events-brokers), and --fleet-topic NAME shows the merged story of every
instance publishing to it (docs/fleet.md).

With --tls-cert and --tls-key every listener speaks TLS; the files are
reloaded when they change and on SIGHUP. --upstream-tls dials the brokers
with TLS; --upstream-ca, --upstream-cert and --upstream-key are reloaded
the same way. --sni-host-pattern serves every broker on the --listen port,
routed by TLS server name.

SIGINT or SIGTERM stop accepting, let requests in flight finish (up to
--shutdown-timeout), write the final timeline to --report as JSON when it
is set, close the journal and exit 0.

serve runs the garbage collector at GOGC=50 unless GOGC is set: its
resident memory stays nearer twice the live heap (docs/benchmarks.md).
In a cgroup with a memory limit (a container's), serve sets Go's soft
memory limit to 90% of it unless GOMEMLIMIT is set; AUTOMEMLIMIT=off turns
that off, and AUTOMEMLIMIT=0.8 takes another share.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags())
			if err != nil {
				return err
			}
			limit, limitErr := gcconfig.SetServe()
			if errors.Is(limitErr, gcconfig.ErrAutomemlimit) {
				return limitErr
			}
			log, err := newLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck // stderr may not support sync
			if limitErr != nil {
				log.Warn("no soft memory limit", zap.Error(limitErr))
			}
			log.Info("memory limit", zap.Stringer("limit", limit))

			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// After the first signal, a second one kills kproxy at once
			// instead of waiting for the drain.
			go func() {
				<-ctx.Done()
				stop()
			}()

			for _, w := range cfg.Warnings(time.Now()) {
				log.Warn(w)
			}
			s, err := newServer(cfg, log)
			if err != nil {
				return err
			}
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			s.hup = hup
			return s.run(ctx)
		},
	}
	config.Flags(cmd.Flags())
	return cmd
}

// server is one `kproxy serve`: the proxy, the pipeline reading its
// queue, the pipeline's consumers and the admin server.
type server struct {
	log      *zap.Logger
	proxy    *proxy.Proxy
	pipeline *pipeline.Pipeline
	admin    *adminServer // nil when off
	obs      *observers
	report   string // the report file, "" for none

	// events publishes this instance's exchanges (events-topic); nil when
	// off.
	events *fleet.Publisher
	// fleet reads every instance's (fleet-topic) into fleetPipeline, which
	// then feeds the observers instead of pipeline; nil when off.
	fleet         *fleet.Source
	fleetPipeline *pipeline.Pipeline

	// hup delivers SIGHUP, which reloads the TLS files; nil (tests) means
	// no reloading on a signal.
	hup <-chan os.Signal
}

// newServer opens every listener and the journal, so that a busy port, a
// bad address or an unusable directory fails before anything runs.
func newServer(cfg config.Config, log *zap.Logger) (*server, error) {
	return newServerWith(cfg, serveHooks{}, log)
}

// newServerWith is newServer with tests' hooks. It builds the proxy
// first, so that everything after it (the admin server's sources) takes
// the proxy itself; on a failure it closes what it opened, newest first.
func newServerWith(cfg config.Config, hooks serveHooks, log *zap.Logger) (_ *server, err error) {
	if err := checkReportPath(cfg.Report); err != nil {
		return nil, err
	}
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	s := &server{log: log, report: cfg.Report}
	if s.proxy, err = proxy.New(proxyConfig(cfg), log); err != nil {
		return nil, err
	}
	undo = append(undo, s.proxy.Close)
	if err := checkListeners(s.proxy, cfg, log); err != nil {
		return nil, err
	}
	if s.obs, err = newObservers(cfg, log); err != nil {
		return nil, err
	}
	undo = append(undo, func() { s.obs.finish("") }) //nolint:errcheck // no report to write
	if err := s.openFleet(cfg, hooks); err != nil {
		return nil, err
	}
	undo = append(undo, s.closeFleet)
	if cfg.Admin != "" {
		if s.admin, err = newAdminServer(cfg.Admin, s.adminSources(cfg), log); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// adminSources are what the admin server reads: the proxy's, the
// pipelines' and the observers' state, and the events topics' when on.
func (s *server) adminSources(cfg config.Config) adminSources {
	obs := s.obs
	src := adminSources{
		proxy:         s.proxy.Stats,
		pipeline:      s.pipeline.Stats,
		timeline:      obs.story.Timeline().Snapshot,
		diagnosis:     obs.story.Diagnosis().FindingsPage,
		groupFindings: obs.story.Diagnosis().GroupFindings,
		findingCounts: obs.story.Diagnosis().Counts,
		history: historyConfig{
			storm: cfg.Timeline,
		},
		warnings: healthWarnings(cfg),
		ready:    s.proxy.Ready,
		access:   adminAccess{hosts: append(slices.Clone(cfg.AdminHosts), cfg.Advertise), token: string(cfg.AdminToken)},

		apis:          obs.apis,
		groups:        obs.groups,
		requestErrors: obs.requestErrors,
	}
	if obs.journal != nil {
		src.journal = obs.journal.Stats
		src.history.dir = cfg.Journal
	}
	if s.events != nil {
		src.events = s.events.Stats
	}
	if s.fleet != nil {
		src.fleet = s.fleet.Stats
		src.pipeline = s.fleetPipeline.Stats
		// The journal holds this instance's exchanges, not the fleet's.
		src.history.dir = ""
	}
	return src
}

// reloadOnHangup reloads the TLS files of both sides (the listeners'
// certificate, the brokers' CA and kproxy's client certificate) on each
// value of hup (SIGHUP) until ctx is done. A failed reload keeps what is in
// use; the proxy logs why.
func (s *server) reloadOnHangup(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			s.log.Info("SIGHUP: reloading the TLS files")
			s.proxy.ReloadTLS() //nolint:errcheck // logged by the proxy
		}
	}
}

// run serves until ctx is done, then stops serve's stages in the order of
// stages, each once the one before has ended, and finishes the
// observers: it settles the timeline, writes the report and closes the
// journal. It returns nil after a clean drain.
func (s *server) run(ctx context.Context) error {
	err := runStages(ctx, s.stages())
	if ferr := s.obs.finish(s.report); ferr != nil && err == nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	logStopped(s.log, s.proxy.Stats(), s.pipeline.Stats())
	return nil
}

// stages is serve's table of components, in the order they stop.
func (s *server) stages() []stage {
	var st []stage
	if s.hup != nil {
		st = append(st, stage{name: "sighup", run: func(ctx context.Context) error {
			s.reloadOnHangup(ctx, s.hup)
			return nil
		}})
	}
	st = append(st,
		// Stops accepting, lets requests in flight finish (up to
		// shutdown-timeout), closes the connections, then ends its queue.
		stage{name: "proxy", run: s.proxy.Run},
		// Not ctx: the pipeline ends with the proxy's queue, once every
		// exchange queued has been handed on (journal, timeline, events).
		stage{name: "pipeline", run: func(context.Context) error {
			return s.pipeline.Run(context.Background(), s.proxy.Queue())
		}})
	if s.events != nil {
		// Ends with ctx, once the pipeline has handed it every exchange;
		// Close waits a while for the topic to acknowledge them.
		st = append(st, stage{name: "events", run: func(ctx context.Context) error {
			s.events.Run(ctx)
			s.events.Close(eventsCloseTimeout)
			return nil
		}})
	}
	if s.fleet != nil {
		// Ends once the fleet source is closed and what it held is
		// handed on.
		st = append(st, stage{name: "fleet pipeline", stop: s.fleet.Close, run: func(context.Context) error {
			return s.fleetPipeline.Run(context.Background(), s.fleet)
		}})
	}
	if s.admin != nil {
		// Last, so that /metrics and the page serve the drain to its end.
		st = append(st, stage{name: "admin", stop: s.admin.shutdown, run: func(context.Context) error {
			s.admin.serve()
			return nil
		}})
	}
	return st
}

// eventsCloseTimeout bounds how long a stopping serve waits for the
// events topic to acknowledge what is buffered.
const eventsCloseTimeout = 5 * time.Second

// openFleet starts the events publisher (events-topic) and opens the
// fleet topic (fleet-topic), and builds the pipelines: without
// fleet-topic, one pipeline from the proxy's queue feeds every observer
// and the publisher; with it, the proxy's queue feeds the journal, the
// per-API metrics and the publisher, and the fleet's merged stream feeds
// the timeline, the diagnosis and the per-group metrics.
func (s *server) openFleet(cfg config.Config, hooks serveHooks) error {
	var err error
	if cfg.EventsTopic != "" {
		if s.events, err = newEventsPublisher(cfg, hooks, s.log); err != nil {
			return err
		}
	}
	if cfg.FleetTopic == "" {
		pc := s.obs.pipelineConfig(s.log)
		pc.Exchanges = append(hooks.exchanges, pc.Exchanges...)
		s.addEvents(&pc)
		s.pipeline = pipeline.New(pc)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetOpenTimeout)
	defer cancel()
	if s.fleet, err = openFleetSource(ctx, cfg, s.log); err != nil {
		s.closeFleet()
		return err
	}
	local, merged := s.obs.fleetPipelineConfigs(s.log)
	s.addEvents(&local)
	s.pipeline = pipeline.New(local)
	s.fleetPipeline = pipeline.New(merged)
	return nil
}

// addEvents makes the publisher a consumer of pc, when there is one.
func (s *server) addEvents(pc *pipeline.Config) {
	if s.events == nil {
		return
	}
	pc.Decoded = append(pc.Decoded, s.events)
	pc.Drops = append(pc.Drops, s.events)
}

// closeFleet closes what openFleet opened, when serve fails to start.
func (s *server) closeFleet() {
	if s.events != nil {
		s.events.Close(0)
	}
	if s.fleet != nil {
		s.fleet.Close()
	}
}

// logStopped is serve's exit summary: connections served, and what the
// pipeline (timeline, journal) missed. Exchanges dropped from the proxy's
// queue make it a warning.
func logStopped(log *zap.Logger, st proxy.Stats, ps pipeline.Stats) {
	fields := []zap.Field{
		zap.Uint64("connections_served", st.ConnectionsTotal),
		zap.Uint64("observer_drops", st.ObserverDrops),
		zap.Uint64("malformed_frames", ps.Undecoded),
	}
	if st.ObserverDrops > 0 {
		log.Warn("kproxy stopped; observers missed exchanges dropped from the full observer queue "+
			"(the timeline is incomplete; a journal notes the gaps)", fields...)
		return
	}
	log.Info("kproxy stopped", fields...)
}

// The journal takes the exchanges and learns of those the proxy drops, as
// gap records; the timeline takes the events.
var (
	_ pipeline.ExchangeConsumer = (*journal.Writer)(nil)
	_ pipeline.EventConsumer    = (*timeline.Live)(nil)
	_ pipeline.DecodedConsumer  = (*diagnose.Live)(nil)
	_ pipeline.BlindConsumer    = (*timeline.Live)(nil)
	_ pipeline.DecodedConsumer  = (*fleet.Publisher)(nil)
	_ pipeline.DropConsumer     = (*fleet.Publisher)(nil)
	_ pipeline.BlindSource      = (*fleet.Source)(nil)
	_ pipeline.TickSource       = (*fleet.Source)(nil)
	_ pipeline.TickSource       = (*proxy.Queue)(nil)
	_ pipeline.Waker            = (*proxy.Queue)(nil)
	_ pipeline.Waker            = (*fleet.Source)(nil)
	_ pipeline.TickConsumer     = (*diagnose.Live)(nil)
	_ pipeline.TickConsumer     = (*timeline.Live)(nil)
	_ pipeline.Source           = (*journal.Source)(nil)
)

// publishEvery is how often at most the live timeline publishes a snapshot
// for the admin server, on the pipeline's goroutine: what it shows lags
// the traffic by about this much, and by a tick of the proxy's queue once
// the traffic pauses.
const publishEvery = 200 * time.Millisecond

// observers are the pipeline's consumers: the journal when one is
// configured, the live timeline, the live diagnosis and the per-API
// metrics; the per-group metrics and the web page's request errors take
// the timeline's entries.
type observers struct {
	journal *journal.Writer // nil when off
	story   *story.Story    // the timeline and the diagnosis
	apis    *apiMetrics     // per-API counts for /metrics
	groups  *groupMetrics   // per-group counts for /metrics, fed by the timeline's entries
	// requestErrors keeps the failed requests the timeline names, for
	// the web page.
	requestErrors *web.RequestErrors
}

// pipelineConfig feeds the journal each exchange before the timeline its
// events, the diagnosis the exchange, counts each exchange and its errors
// per API, and logs one line per group exchange to log. The per-group
// metrics and the request errors are fed by the timeline's entries, on the
// pipeline's goroutine too.
func (o *observers) pipelineConfig(log *zap.Logger) pipeline.Config {
	cfg := pipeline.Config{Log: log}
	o.story.Feed(&cfg)
	cfg.Events = append(cfg.Events, o.apis)
	if o.journal != nil {
		cfg.Exchanges = []pipeline.ExchangeConsumer{o.journal}
	}
	cfg.Exchanges = append(cfg.Exchanges, o.apis)
	return cfg
}

// fleetPipelineConfigs split pipelineConfig in two for fleet-topic: local
// takes the proxy's exchanges for the journal and the per-API metrics, and
// logs them; merged takes the fleet's for the timeline (and through its
// entries the per-group metrics and request errors) and the diagnosis.
func (o *observers) fleetPipelineConfigs(log *zap.Logger) (local, merged pipeline.Config) {
	local = pipeline.Config{Log: log, Events: []pipeline.EventConsumer{o.apis}}
	if o.journal != nil {
		local.Exchanges = []pipeline.ExchangeConsumer{o.journal}
	}
	local.Exchanges = append(local.Exchanges, o.apis)
	o.story.Feed(&merged)
	return local, merged
}

// newObservers opens the journal (cfg.Journal) and starts the live
// timeline, whose entries are logged by a logger named "timeline".
func newObservers(cfg config.Config, log *zap.Logger) (*observers, error) {
	o := &observers{}
	if cfg.Journal != "" {
		w, err := journal.Open(cfg.Journal, journalOptions(cfg), log)
		if err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		log.Info("journaling exchanges", zap.String("journal_dir", cfg.Journal),
			zap.Stringer("fsync", cfg.JournalOptions.Fsync))
		o.journal = w
	}
	o.requestErrors = web.NewRequestErrors(0, 0)
	o.groups = newGroupMetrics(cfg.MetricsMaxGroups)
	logEntry := timelineLogger(log.Named("timeline"), cfg.LogFormat)
	tcfg := cfg.Timeline
	tcfg.PublishEvery = publishEvery
	tcfg.OnEntry = func(e timeline.Entry) {
		logEntry(e)
		o.requestErrors.Record(e)
		o.groups.Record(e)
	}
	if cfg.LogFormat == "console" {
		// Clock times in the entries match the console log's own.
		tcfg.Location = time.Local
	}
	o.story = story.New(story.Config{Timeline: tcfg, Retain: cfg.TimelineRetain,
		Diagnose: true, Diagnosis: diagnose.Config{Forget: cfg.TimelineRetain.MaxAge},
		OnFinding:  diagnosisLogger(log.Named("diagnosis"), cfg.LogFormat),
		AfterStorm: stormFindingsLogger(log.Named("timeline"), cfg.LogFormat)})
	o.apis = newAPIMetrics()
	return o, nil
}

// finish runs once the pipeline has stopped: it settles the timeline, writes
// the final report to reportPath unless it is "", and closes the journal.
func (o *observers) finish(reportPath string) error {
	// Settle as of the last event seen, not the wall clock, so that
	// replaying the journal of the same traffic gives the same report.
	o.story.Close(time.Time{})
	var errs []error
	if reportPath != "" {
		if err := writeReport(reportPath, o.story.Report()); err != nil {
			errs = append(errs, err)
		}
	}
	if o.journal != nil {
		// Close logs a summary, with the exchanges it had to drop and
		// the write error that has journaling suspended, if any. That
		// error (a full disk) is the environment's, not a failure of
		// kproxy, which forwarded every byte: the exit status stays 0,
		// as documented.
		o.journal.Close()
	}
	return errors.Join(errs...)
}

// timelineLogger logs each timeline entry at info level. For people
// (console) the message is the entry's line and its summary block, with no
// fields; for machines (json) the message is the entry's sentence and the
// fields carry its facts.
func timelineLogger(log *zap.Logger, format string) func(timeline.Entry) {
	if format == "json" {
		return func(e timeline.Entry) {
			if ce := log.Check(zap.InfoLevel, e.Text); ce != nil { // fields built only for a line written
				ce.Write(e.ZapFields()...)
			}
		}
	}
	return func(e timeline.Entry) {
		if log.Core().Enabled(zap.InfoLevel) {
			log.Info(strings.Join(e.Lines(), "\n"))
		}
	}
}

// checkReportPath fails early when the report could not be written at the
// end: its directory is missing or not writable, or path is a directory.
func checkReportPath(path string) error {
	if path == "" {
		return nil
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return fmt.Errorf("report: %s is a directory; want a file path", path)
	}
	probe, err := createReportTemp(path)
	if err != nil {
		return fmt.Errorf("report: %s: cannot create files in its directory: %w", path, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// writeReport writes r as JSON to path, mode 0600, replacing the file at
// once so that a reader never sees half a report.
func writeReport(path string, r *timeline.Report) error {
	f, err := createReportTemp(path)
	if err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	err = timeline.WriteJSON(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}

// createReportTemp creates a temporary file, mode 0600, next to the
// report at path: writeReport writes the report into it and renames it into
// place, and checkReportPath tries the same at startup.
func createReportTemp(path string) (*os.File, error) {
	return os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
}

// journalOptions is the journal's part of the configuration, stamped with
// this build's version.
func journalOptions(cfg config.Config) journal.Options {
	o := cfg.JournalOptions
	o.KproxyVersion = kproxyVersion()
	return o
}

// healthWarnings are what /healthz reports besides "ok": settings that
// weaken security.
func healthWarnings(cfg config.Config) []string {
	if cfg.UpstreamTLS && cfg.UpstreamInsecureSkipVerify {
		return []string{proxy.InsecureUpstreamWarning}
	}
	return nil
}

// proxyConfig is the proxy's part of the configuration, with the fields
// built from several settings: the TLS of both sides, the upstream SASL
// credentials and the addresses other parts of kproxy listen on.
func proxyConfig(cfg config.Config) proxy.Config {
	pc := cfg.Proxy
	if cfg.TLSCert != "" {
		pc.TLS = &proxy.ListenerTLS{
			CertFile:       cfg.TLSCert,
			KeyFile:        cfg.TLSKey,
			ClientCAFile:   cfg.TLSClientCA,
			ReloadInterval: cfg.TLSReloadInterval,
		}
	}
	if cfg.UpstreamTLS {
		pc.UpstreamTLS = &proxy.UpstreamTLS{
			CAFile:             cfg.UpstreamCA,
			CertFile:           cfg.UpstreamCert,
			KeyFile:            cfg.UpstreamKey,
			ServerName:         cfg.UpstreamServerName,
			InsecureSkipVerify: cfg.UpstreamInsecureSkipVerify,
			ReloadInterval:     cfg.TLSReloadInterval,
		}
	}
	pc.UpstreamSASL = proxy.UpstreamSASL{
		Mechanism: cfg.UpstreamSASLMechanism,
		Username:  cfg.UpstreamSASLUsername,
		Password:  string(cfg.UpstreamSASLPassword),
	}
	pc.Reserved = reservedAddrs(cfg)
	return pc
}
