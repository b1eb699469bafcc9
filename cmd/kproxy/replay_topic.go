package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/fleet"
)

// topicOptions are replay's flags for reading the events topic of a fleet
// (docs/fleet.md) instead of journals.
type topicOptions struct {
	topic   string   // --from-topic
	brokers []string // --brokers
	maxSkew time.Duration
	config  string // --config: serve's file, for TLS and SASL
}

// addFlags adds --from-topic, --brokers and --max-skew to f.
func (t *topicOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&t.topic, "from-topic", "", "read the events topic NAME that kproxy serve --events-topic instances publish to, instead of journals: the story of the whole fleet")
	f.StringSliceVar(&t.brokers, "brokers", nil, "seed brokers of the cluster holding --from-topic, HOST:PORT[,HOST:PORT]")
	f.StringVar(&t.config, "config", "", "with --from-topic: kproxy serve's configuration file, whose upstream TLS and SASL settings (upstream-tls, upstream-ca, upstream-cert, upstream-key, upstream-server-name, upstream-sasl-*) dial --brokers; KPROXY_* variables apply as for serve")
	f.DurationVar(&t.maxSkew, "max-skew", config.DefaultMaxSkew, "with --from-topic: largest clock offset between instances corrected (as serve's --max-skew)")
}

// replayArgs checks replay's arguments: journals, or --from-topic with
// --brokers and no journal.
func (t *topicOptions) replayArgs(args []string) error {
	if t.topic == "" {
		if len(t.brokers) > 0 {
			return errors.New("replay: --brokers: only with --from-topic")
		}
		if t.config != "" {
			return errors.New("replay: --config: only with --from-topic")
		}
		if len(args) == 0 {
			return errors.New("replay: want at least one journal PATH, or --from-topic NAME --brokers HOST:PORT")
		}
		return nil
	}
	if len(args) > 0 {
		return fmt.Errorf("replay: --from-topic reads a topic, not journals: drop %s", strings.Join(args, " "))
	}
	if reason := config.TopicNameError(t.topic); reason != "" {
		return fmt.Errorf("replay: --from-topic %q: %s", t.topic, reason)
	}
	if len(t.brokers) == 0 {
		return errors.New("replay: --brokers: required with --from-topic")
	}
	for _, b := range t.brokers {
		if _, port, ok := strings.Cut(b, ":"); !ok || port == "" {
			return fmt.Errorf("replay: --brokers %q: want HOST:PORT", b)
		}
	}
	if t.maxSkew <= 0 || t.maxSkew > config.MaxMaxSkew {
		return fmt.Errorf("replay: --max-skew %s: out of range (more than 0, at most %s)", t.maxSkew, config.MaxMaxSkew)
	}
	return nil
}

// openReplayInput opens the journals at paths, drawing the progress bar
// on errOut, the packet captures at paths (--pcap), or the topic
// --from-topic names.
func openReplayInput(ctx context.Context, paths []string, o replayOptions, errOut io.Writer) (*storyInput, error) {
	if o.fromTopic.topic != "" {
		return openTopicInput(ctx, o)
	}
	if o.pcap {
		return openCaptureInput(paths, o.capture)
	}
	in, err := openJournalInput(paths, errOut)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return in, nil
}

// topicOpenTimeout bounds replay's first look at the topic.
const topicOpenTimeout = 30 * time.Second

// openTopicInput reads the events topic from --since (less the merge's
// hold) to the end it has now, merging every instance's records.
func openTopicInput(ctx context.Context, o replayOptions) (*storyInput, error) {
	opts, err := topicClientOpts(o.fromTopic)
	if err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, topicOpenTimeout)
	defer cancel()
	src, err := fleet.OpenSource(octx, fleet.SourceConfig{
		Topic:  o.fromTopic.topic,
		Client: opts,
		Since:  o.since,
		Merge:  fleet.MergeConfig{MaxSkew: o.fromTopic.maxSkew},
	})
	if err != nil {
		return nil, fmt.Errorf("replay: --from-topic: %w", err)
	}
	return &storyInput{
		Source: src,
		close:  src.Close,
		finish: func(errOut io.Writer) { warnFleet(errOut, src.Stats()) },
	}, nil
}

// topicClientOpts are the options of replay's client of the topic: the
// seed brokers, dialed with the upstream TLS and SASL settings serve
// would use, from --config and the KPROXY_* environment.
func topicClientOpts(t topicOptions) ([]kgo.Opt, error) {
	fs := pflag.NewFlagSet("replay", pflag.ContinueOnError)
	config.Flags(fs)
	args := []string{"--" + config.KeyUpstream, strings.Join(t.brokers, ",")}
	if t.config != "" {
		args = append(args, "--"+config.KeyConfig, t.config)
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	cfg, err := config.Load(fs)
	if err != nil {
		return nil, fmt.Errorf("replay: --from-topic's TLS and SASL settings: %w", err)
	}
	opts, err := eventsClientOpts(cfg, t.brokers)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return append(opts, kgo.ClientID("kproxy-replay")), nil
}

// warnFleet tells the user on stderr what the fleet's story misses and
// which clocks were corrected.
func warnFleet(w io.Writer, st fleet.SourceStats) {
	for inst, off := range st.Offsets {
		fmt.Fprintf(w, "kproxy: note: instance %s's clock is %s off; its times were corrected\n", inst, off)
	}
	if st.SkewRefused > 0 {
		fmt.Fprintf(w, "kproxy: warning: %d clock offset estimates were beyond --max-skew and not applied\n", st.SkewRefused)
	}
	for _, g := range st.Gaps {
		if g.To.IsZero() {
			fmt.Fprintf(w, "kproxy: warning: instance %s went silent after %s (killed, or cut off from the cluster): what it observed since is missing\n",
				g.Instance, g.From.UTC().Format(inspectTime))
			continue
		}
		fmt.Fprintf(w, "kproxy: warning: instance %s was silent from %s to %s: what it observed meanwhile is missing\n",
			g.Instance, g.From.UTC().Format(inspectTime), g.To.UTC().Format(inspectTime))
	}
	if st.Lost > 0 {
		fmt.Fprintf(w, "kproxy: warning: the topic misses %d exchanges the instances observed (their producers dropped them)\n", st.Lost)
	}
	if st.Late > 0 {
		fmt.Fprintf(w, "kproxy: warning: %d records arrived too late to be placed in time order\n", st.Late)
	}
	if st.Foreign > 0 {
		fmt.Fprintf(w, "kproxy: warning: %d records of the topic were not written by kproxy and were skipped\n", st.Foreign)
	}
}
