package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/proxy"
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
SIGINT or SIGTERM stop accepting, let requests in flight finish (up to
--shutdown-timeout) and exit 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags())
			if err != nil {
				return err
			}
			log, err := newLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck // stderr may not support sync

			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// After the first signal, a second one kills kproxy at once
			// instead of waiting for the drain.
			go func() {
				<-ctx.Done()
				stop()
			}()

			s, err := newServer(cfg, log)
			if err != nil {
				return err
			}
			return s.run(ctx)
		},
	}
	config.Flags(cmd.Flags())
	return cmd
}

// server is one `kproxy serve`: the proxy, its observers and the admin
// server.
type server struct {
	log   *zap.Logger
	proxy *proxy.Proxy
	admin *adminServer // nil when off
	close func() error // closes the observers
}

// newServer opens every listener, so that a busy port or a bad address
// fails before anything runs.
func newServer(cfg config.Config, log *zap.Logger) (*server, error) {
	obs, closeObs, err := newObservers(cfg, log)
	if err != nil {
		return nil, err
	}
	s := &server{log: log, close: closeObs}
	if cfg.Admin != "" {
		// The handlers run only once run has started, after s.proxy is set.
		s.admin, err = newAdminServer(cfg.Admin, func() proxy.Stats { return s.proxy.Stats() }, log)
		if err != nil {
			closeObs()
			return nil, err
		}
	}
	s.proxy, err = proxy.New(proxyConfig(cfg), log, obs...)
	if err != nil {
		if s.admin != nil {
			s.admin.ln.Close()
		}
		closeObs()
		return nil, err
	}
	return s, nil
}

// run serves until ctx is done, then drains the proxy, stops the admin
// server and closes the observers. It returns nil after a clean drain.
func (s *server) run(ctx context.Context) error {
	if s.admin != nil {
		go s.admin.serve() // ends with s.admin.shutdown below
	}
	err := s.proxy.Run(ctx)
	if s.admin != nil {
		s.admin.shutdown()
	}
	if cerr := s.close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.log.Info("kproxy stopped", zap.Uint64("connections_served", s.proxy.Stats().ConnectionsTotal))
	return nil
}

// newObservers builds what watches the traffic besides the proxy's own log
// lines (one per group exchange), and a function that closes them once the
// proxy has stopped.
//
// HOOK (lead): the journal observer (cfg.Journal) and the timeline
// observer are added here: append them to obs and their Close to closers.
func newObservers(cfg config.Config, log *zap.Logger) (obs []proxy.Observer, closeAll func() error, err error) {
	var closers []func() error
	closeAll = func() error {
		var first error
		for i := len(closers) - 1; i >= 0; i-- {
			if err := closers[i](); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	if cfg.Journal != "" {
		// Refuse rather than silently not journal what the user asked for.
		return nil, nil, fmt.Errorf("serve: --journal %s: the journal is not wired into serve yet", cfg.Journal)
	}
	return obs, closeAll, nil
}

// proxyConfig is the proxy's part of the configuration.
func proxyConfig(cfg config.Config) proxy.Config {
	return proxy.Config{
		Listen:          cfg.Listen,
		Upstreams:       cfg.Upstreams,
		Advertise:       cfg.Advertise,
		BrokerPortBase:  cfg.BrokerPortBase,
		BrokerListeners: cfg.BrokerListeners,
		MaxFrameSize:    cfg.MaxFrameSize,
		DialTimeout:     cfg.DialTimeout,
		ShutdownTimeout: cfg.ShutdownTimeout,
		ObserverQueue:   cfg.ObserverQueue,
	}
}
