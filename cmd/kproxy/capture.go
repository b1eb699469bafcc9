package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/capture"
	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/timeline"
)

// captureFlags are the flags of the commands that read packet captures:
// replay --pcap and capture.
type captureFlags struct {
	brokerPorts []int // --broker-ports
}

// addFlags adds --broker-ports to f.
func (c *captureFlags) addFlags(f *pflag.FlagSet) {
	f.IntSliceVar(&c.brokerPorts, "broker-ports", []int{capture.DefaultBrokerPort},
		"with --pcap: TCP ports the brokers listen on (the ports Metadata responses in the capture name are added)")
}

// config checks the flags and returns the capture's configuration; its
// errors start with command.
func (c *captureFlags) config(command string) (capture.Config, error) {
	var cfg capture.Config
	for _, p := range c.brokerPorts {
		if p < 1 || p > 65535 {
			return cfg, fmt.Errorf("%s: --broker-ports %d: want a TCP port, 1 to 65535", command, p)
		}
		cfg.BrokerPorts = append(cfg.BrokerPorts, uint16(p))
	}
	return cfg, nil
}

// openCaptureInput opens the packet captures at paths ("-": standard
// input), merged by time, as replay reads them.
func openCaptureInput(paths []string, flags captureFlags) (*storyInput, error) {
	cfg, err := flags.config("replay")
	if err != nil {
		return nil, err
	}
	src, err := capture.Open(cfg, paths...)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return &storyInput{
		Source: src,
		close:  func() { src.Close() },
		finish: func(errOut io.Writer) { warnCapture(errOut, src.Stats(), src.Err(), cfg.BrokerPorts) },
	}, nil
}

// warnCapture tells on w what the story of a capture misses, and why.
func warnCapture(w io.Writer, st capture.Stats, readErr error, ports []uint16) {
	if readErr != nil {
		fmt.Fprintf(w, "kproxy: warning: %v: the capture ends there (cut mid-packet, as when tcpdump is killed); every packet before it was read\n", readErr)
	}
	if st.Connections == 0 {
		ps := make([]string, len(ports))
		for i, p := range ports {
			ps[i] = fmt.Sprint(p)
		}
		fmt.Fprintf(w, "kproxy: warning: no Kafka connection in %d packets: none to or from broker ports %s (set --broker-ports)\n",
			st.Packets, strings.Join(ps, ","))
	}
	if st.TLSConnections > 0 {
		fmt.Fprintf(w, "kproxy: warning: %d TLS connections (%d bytes) were skipped: encrypted traffic cannot be read (docs/capture.md)\n",
			st.TLSConnections, st.TLSBytes)
	}
	if st.SASLv0Connections > 0 {
		fmt.Fprintf(w, "kproxy: warning: %d connections authenticating with SaslHandshake v0 were skipped after it (their SASL tokens travel without Kafka headers)\n",
			st.SASLv0Connections)
	}
	if st.Gaps > 0 || st.Lost > 0 {
		fmt.Fprintf(w, "kproxy: warning: the capture misses %d bytes in %d gaps (packets it dropped, or cut by its snap length): %d exchanges known lost and %d stretches of connections whose frames were lost are not told\n",
			st.GapBytes, st.Gaps, st.Lost-st.Untracked, st.Untracked)
	}
	if st.Unfinished > 0 {
		fmt.Fprintf(w, "kproxy: note: %d requests were still awaiting their response when the capture ended; they are not told\n", st.Unfinished)
	}
}

// captureOptions are the flags of `kproxy capture`.
type captureOptions struct {
	pcap  string // --pcap: the capture stream, - for standard input
	flags captureFlags
	// cfg holds what the command shares with serve: the admin server,
	// the journal, the report, logging and storm settings.
	cfg config.Config
}

func newCaptureCmd() *cobra.Command {
	o := captureOptions{cfg: config.Default()}
	cmd := &cobra.Command{
		Use:   "capture --pcap FILE|- [--broker-ports PORT,...] [--admin HOST:PORT] [--journal DIR] [--report FILE]",
		Short: "Tell the story of a packet capture as it is taken, without a proxy",
		Long: `capture reads a packet capture of Kafka traffic as it is written (pcap or
pcapng; - for standard input, or a named pipe; a file is read to its end)
and tells its story as serve tells the traffic
it forwards: the timeline logged, and the web page, /metrics and /timeline
served by the admin server. Clients keep talking to the brokers directly,
and kproxy needs no privileges: the capture comes from tcpdump, e.g.

  tcpdump -i any -U -w - 'tcp port 9092' | kproxy capture --pcap -

--journal DIR writes the exchanges read as serve journals them, for
replay, diagnose and fleet merges. It ends with the capture, or on SIGINT
or SIGTERM, settling the timeline and writing --report. docs/capture.md
says how to capture on a broker, on a client and in Kubernetes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.pcap == "" {
				return errors.New("capture: --pcap: required (a capture file, or - for standard input)")
			}
			if o.cfg.StormRebalances < 2 {
				return fmt.Errorf("capture: --storm-rebalances %d: want at least 2", o.cfg.StormRebalances)
			}
			if o.cfg.StormWindow <= 0 {
				return fmt.Errorf("capture: --storm-window %s: want a positive duration", o.cfg.StormWindow)
			}
			if err := checkReportPath(o.cfg.Report); err != nil {
				return err
			}
			ccfg, err := o.flags.config("capture")
			if err != nil {
				return err
			}
			log, err := newLogger(os.Stderr, o.cfg.LogFormat, o.cfg.LogLevel)
			if err != nil {
				return fmt.Errorf("capture: --%w", err)
			}
			defer log.Sync() //nolint:errcheck // stderr may not support sync
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			in := io.Reader(os.Stdin)
			if o.pcap != "-" {
				f, err := os.Open(o.pcap)
				if err != nil {
					return fmt.Errorf("capture: %w", err)
				}
				defer f.Close()
				in = f
			}
			return runCapture(ctx, o, ccfg, in, log, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.pcap, "pcap", "", "the capture to read as it is written: a file, or - for standard input")
	o.flags.addFlags(f)
	f.StringVar(&o.cfg.Admin, config.KeyAdmin, o.cfg.Admin, "admin server address (web page, /metrics, /timeline); empty to disable")
	f.StringVar(&o.cfg.Journal, config.KeyJournal, "", "journal the exchanges read into this directory, as serve does")
	f.StringVar(&o.cfg.Report, config.KeyReport, "", "write the final timeline report (JSON) to this file on exit")
	f.StringVar(&o.cfg.LogFormat, config.KeyLogFormat, o.cfg.LogFormat, "log format: console or json")
	f.StringVar(&o.cfg.LogLevel, config.KeyLogLevel, o.cfg.LogLevel, "log level: debug, info, warn or error")
	f.IntVar(&o.cfg.StormRebalances, config.KeyStormRebalances, o.cfg.StormRebalances, "a group rebalancing this many times within --storm-window is in a storm (as serve's flag)")
	f.DurationVar(&o.cfg.StormWindow, config.KeyStormWindow, o.cfg.StormWindow, "sliding window of storm detection (as serve's flag)")
	return cmd
}

// runCapture tells the story of the capture in as serve tells its traffic,
// until in ends or ctx is done; started, when set, is called with the
// admin server's address once it serves.
func runCapture(ctx context.Context, o captureOptions, ccfg capture.Config, in io.Reader, log *zap.Logger, started func(admin string)) error {
	src, err := capture.NewSource(ccfg, []string{captureName(o.pcap)}, []io.Reader{in})
	if err != nil {
		return err
	}
	obs, err := newObservers(o.cfg, log)
	if err != nil {
		return err
	}
	pl := pipeline.New(obs.pipelineConfig(log))
	var admin *adminServer
	if o.cfg.Admin != "" {
		src := adminSources{
			pipeline:      pl.Stats,
			capture:       src.Stats,
			timeline:      obs.story.Timeline().Snapshot,
			diagnosis:     obs.story.Diagnosis().FindingsPage,
			groupFindings: obs.story.Diagnosis().GroupFindings,
			findingCounts: obs.story.Diagnosis().Counts,
			history:       historyConfig{storm: timeline.Config{StormRebalances: o.cfg.StormRebalances, StormWindow: o.cfg.StormWindow}},
			access:        adminAccess{hosts: o.cfg.AdminHosts},
			apis:          obs.apis,
			groups:        obs.groups,
			requestErrors: obs.requestErrors,
		}
		if obs.journal != nil {
			src.journal = obs.journal.Stats
			src.history.dir = o.cfg.Journal
		}
		if admin, err = newAdminServer(o.cfg.Admin, src, log); err != nil {
			obs.finish("")
			return err
		}
		go admin.serve() // ends with admin.shutdown below
		log.Info("admin server listening", zap.Stringer("admin_addr", admin.Addr()))
		if started != nil {
			started(admin.Addr().String())
		}
	}
	err = pl.Run(context.Background(), &liveSource{ctx: ctx, xs: readLive(src), woken: make(chan struct{}, 1)})
	if admin != nil {
		admin.shutdown()
	}
	if ferr := obs.finish(o.cfg.Report); ferr != nil && err == nil {
		err = ferr
	}
	var warnings strings.Builder
	warnCapture(&warnings, src.Stats(), src.Err(), ccfg.BrokerPorts)
	for _, line := range strings.Split(strings.TrimSpace(warnings.String()), "\n") {
		if line != "" {
			log.Warn(strings.TrimPrefix(strings.TrimPrefix(line, "kproxy: warning: "), "kproxy: note: "))
		}
	}
	st := src.Stats()
	log.Info("capture ended", zap.Uint64("packets", st.Packets), zap.Uint64("connections", st.Connections),
		zap.Uint64("exchanges", st.Exchanges), zap.Uint64("lost", st.Lost))
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
}

// captureName names the capture in errors.
func captureName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}

// liveItem is one answer of a capture.Source, read ahead.
type liveItem struct {
	x    *decode.Exchange
	lost uint64
	err  error
}

// readLive reads src on a goroutine of its own, which a read of standard
// input may block; the channel closes after src's last answer.
func readLive(src *capture.Source) <-chan liveItem {
	xs := make(chan liveItem, 64)
	go func() {
		defer close(xs)
		for {
			x, lost, err := src.Next()
			xs <- liveItem{x, lost, err}
			if err != nil {
				return
			}
		}
	}()
	return xs
}

// liveSource is a pipeline.TickSource of what readLive reads, which ends
// when ctx is done, however long the capture stream waits: its exchanges
// are never reused. When the stream has had nothing for tickEvery it
// ticks, so that the diagnosis notices silences a live capture shows (a
// member that stopped heartbeating) without waiting for the next exchange.
type liveSource struct {
	ctx context.Context
	xs  <-chan liveItem
	// woken makes Next return at once (Wake).
	woken chan struct{}

	idle *time.Timer
	// last is the completion time of the last exchange handed out, on the
	// capture's clock, and lastRead when it was handed out, on the wall
	// clock: a tick moves the capture's clock on by the wall time since.
	last, lastRead, tickAt time.Time
}

// tickEvery is how long a live capture stays silent before liveSource
// ticks, and tickSlack how far behind the extrapolated capture clock the
// tick is set, for packets tcpdump has yet to flush (as proxy.Queue).
const (
	tickEvery = time.Second
	tickSlack = 100 * time.Millisecond
)

func (s *liveSource) Next() (*decode.Exchange, uint64, error) {
	if s.idle == nil {
		s.idle = time.NewTimer(tickEvery)
	} else {
		s.idle.Reset(tickEvery)
	}
	for {
		select {
		case <-s.ctx.Done():
			return nil, 0, io.EOF
		case it, ok := <-s.xs:
			if !ok {
				return nil, 0, io.EOF
			}
			if it.x != nil {
				s.last, s.lastRead = it.x.CompletedAt(), time.Now()
			}
			return it.x, it.lost, it.err
		case <-s.woken:
			return nil, 0, nil // Tick stays as it was: not a tick
		case now := <-s.idle.C:
			at := s.last.Add(now.Sub(s.lastRead) - tickSlack)
			if s.last.IsZero() || !at.After(s.tickAt) {
				s.idle.Reset(tickEvery)
				continue
			}
			s.tickAt = at
			return nil, 0, nil
		}
	}
}

// Tick is the time of the tick Next last returned.
func (s *liveSource) Tick() time.Time { return s.tickAt }

var _ pipeline.Waker = (*liveSource)(nil)

// Wake makes Next, waiting for the capture, return at once with a nil
// exchange (pipeline.Waker): the pipeline then renders what the admin
// server's readers asked for.
func (s *liveSource) Wake() {
	select {
	case s.woken <- struct{}{}:
	default:
	}
}
