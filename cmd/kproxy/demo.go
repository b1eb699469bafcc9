package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/demo"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
	"github.com/kproxy-dev/kproxy/story"
	"github.com/kproxy-dev/kproxy/timeline"
	"github.com/kproxy-dev/kproxy/web"
)

// demoBrokers is the size of the demo's embedded cluster.
const demoBrokers = 3

// demoFlags are the flags of `kproxy demo`.
type demoFlags struct {
	journal string // --journal: also journal to this directory; "" off
	admin   string // --admin: the admin server with the web page; "" off
	keep    bool   // --keep: stay up after the scenario until interrupted
}

func newDemoCmd() *cobra.Command {
	var flags demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the seed rebalance scenario on an embedded Kafka, through kproxy, and print its timeline",
		Long: `demo needs no setup. It starts an embedded Kafka cluster (franz-go kfake,
` + fmt.Sprint(demoBrokers) + ` brokers) with topic ` + demo.Topic + ` (` + fmt.Sprint(demo.Partitions) + ` partitions) and kproxy in front of it,
then consumer A (range assignor, manual commits, commits what it processed
when partitions are revoked, 1 s of work per poll) joins group ` + demo.Group + `,
and consumer B (2 s per poll) joins a few seconds later. It prints kproxy's live
timeline, with what the consumers themselves say in between, and exits by
itself in about 20 seconds. With --journal it also records what kproxy saw, for
` + "`kproxy replay`" + `. The admin server (--admin, a free loopback port by default)
serves the web page with the group's timeline as a picture; its address is
printed first. With --keep the demo stays up after the scenario, until Ctrl-C,
so that the page can be explored.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDemo(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), flags, demo.Options{})
		},
	}
	cmd.Flags().StringVar(&flags.journal, "journal", "", "also journal the exchanges kproxy observes to this directory")
	cmd.Flags().StringVar(&flags.admin, "admin", "127.0.0.1:0", `admin server (web page, /metrics) address; "" for none`)
	cmd.Flags().BoolVar(&flags.keep, "keep", false, "stay up after the scenario, serving the web page, until Ctrl-C")
	return cmd
}

// runDemo runs the demo, printing the timeline and the consumers' own
// narration to out, problems to errw.
func runDemo(ctx context.Context, out, errw io.Writer, flags demoFlags, opts demo.Options) error {
	journalDir := flags.journal
	log, err := newLogger(errw, "console", "warn")
	if err != nil {
		return err
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(demoBrokers), kfake.SeedTopics(demo.Partitions, demo.Topic))
	if err != nil {
		return fmt.Errorf("demo: start embedded kafka: %w", err)
	}
	defer cluster.Close()

	var mu sync.Mutex // out is written by the pipeline goroutine and the consumers
	printf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format, args...)
	}

	plCfg := pipeline.Config{Log: log}
	var jw *journal.Writer
	if journalDir != "" {
		opts := journal.DefaultOptions()
		opts.KproxyVersion = kproxyVersion()
		jw, err = journal.Open(journalDir, opts, log)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		plCfg.Exchanges = []pipeline.ExchangeConsumer{jw}
	}
	requestErrors := web.NewRequestErrors(0, 0)
	groups := newGroupMetrics(config.DefaultMetricsMaxGroups)
	// A live story, as serve's, so that the web page reads its snapshots
	// while the pipeline adds events.
	st := story.New(story.Config{Retain: timeline.DefaultRetention, Timeline: timeline.Config{
		Location:     time.Local,
		PublishEvery: publishEvery,
		OnEntry: func(e timeline.Entry) {
			for _, l := range e.Lines() {
				printf("%s\n", l)
			}
			requestErrors.Record(e)
			groups.Record(e)
		},
	}})
	st.Feed(&plCfg)
	apis := newAPIMetrics()
	plCfg.Exchanges = append(plCfg.Exchanges, apis)
	plCfg.Events = append(plCfg.Events, apis)

	listeners := map[int32]string{}
	for n := int32(0); n < demoBrokers; n++ {
		listeners[n] = "127.0.0.1:0"
	}
	p, err := proxy.New(proxy.Config{
		Listen:          "127.0.0.1:0",
		Upstreams:       cluster.ListenAddrs(),
		BrokerListeners: listeners,
	}, log)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	pl := pipeline.New(plCfg)
	piped := make(chan error, 1)
	go func() { piped <- pl.Run(context.Background(), p.Queue()) }() // ends with the proxy's queue
	pctx, stopProxy := context.WithCancel(context.Background())
	proxyDone := make(chan error, 1)
	go func() { proxyDone <- p.Run(pctx) }() // ends with stopProxy below

	if flags.admin != "" {
		admin, err := newAdminServer(flags.admin, adminSources{proxy: p.Stats, pipeline: pl.Stats, timeline: st.Timeline().Snapshot,
			requestErrors: requestErrors, apis: apis, groups: groups}, log)
		if err != nil {
			stopProxy()
			<-proxyDone
			<-piped
			return fmt.Errorf("demo: %w", err)
		}
		go admin.serve() // ends with admin.shutdown
		defer admin.shutdown()
		printf("kproxy demo: web page at http://%s/groups/%s\n", admin.Addr(), demo.Group)
	}

	part := decode.CoordinatorPartition(demo.Group, decode.DefaultOffsetsPartitions)
	printf("kproxy demo: embedded Kafka with %d brokers, kproxy listening on %s\n", demoBrokers, p.Addr())
	printf("group %s lives in __consumer_offsets partition %d (of %d); its leader is the coordinator\n",
		demo.Group, part, decode.DefaultOffsetsPartitions)
	printf("consumer A starts now; consumer B, slower, joins in a few seconds. Lines starting with \"|\" are what the consumers say; the rest is kproxy's timeline.\n\n")

	opts.Narrate = func(line string) {
		printf("%s | %s\n", time.Now().Format("15:04:05.000"), line)
	}
	runErr := demo.Run(ctx, p.Addr().String(), opts)
	if flags.keep && runErr == nil {
		printf("\nthe scenario is over; kproxy demo stays up (--keep): press Ctrl-C to stop\n")
		<-ctx.Done()
	}

	stopProxy()
	if err := <-proxyDone; err != nil && runErr == nil {
		runErr = fmt.Errorf("demo: proxy: %w", err)
	}
	if err := <-piped; err != nil && runErr == nil {
		runErr = fmt.Errorf("demo: %w", err)
	}
	st.Close(time.Time{})
	if jw != nil {
		if err := jw.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("demo: journal: %w", err)
		}
		printf("\njournal written to %s: replay it with `kproxy replay %s`\n", journalDir, journalDir)
	}
	if s, ps := p.Stats(), pl.Stats(); s.ObserverDrops > 0 || ps.Undecoded > 0 {
		log.Warn("demo: not everything was observed", zap.Uint64("observer_drops", s.ObserverDrops),
			zap.Uint64("malformed_frames", ps.Undecoded))
	}
	return runErr
}
