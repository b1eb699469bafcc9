package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/fleet"
	"github.com/kproxy-dev/kproxy/pipeline"
)

// eventsBrokers are the seed brokers of the events topics' cluster:
// events-brokers, or the upstream ones.
func eventsBrokers(cfg config.Config) []string {
	if len(cfg.EventsBrokers) > 0 {
		return cfg.EventsBrokers
	}
	return cfg.Upstreams
}

// eventsClientOpts are the options of kproxy's own clients of the events
// topics: the seed brokers, and the TLS and SASL settings kproxy dials the
// brokers with (upstream-tls, upstream-ca, upstream-cert/key,
// upstream-server-name, upstream-sasl-*). The TLS files are read once,
// here; a reload (SIGHUP) reaches the proxy's connections, not these.
func eventsClientOpts(cfg config.Config, brokers []string) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID("kproxy-events"),
		kgo.DialTimeout(cfg.DialTimeout)}
	if cfg.UpstreamTLS {
		tc, err := eventsTLS(cfg)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	switch cfg.UpstreamSASLMechanism {
	case "":
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: cfg.UpstreamSASLUsername, Pass: string(cfg.UpstreamSASLPassword)}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: cfg.UpstreamSASLUsername, Pass: string(cfg.UpstreamSASLPassword)}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: cfg.UpstreamSASLUsername, Pass: string(cfg.UpstreamSASLPassword)}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("events: upstream-sasl-mechanism %q: not supported", cfg.UpstreamSASLMechanism)
	}
	return opts, nil
}

// eventsTLS is the TLS configuration of the events clients, from the
// upstream TLS files. kgo sets the server name to the host dialed unless
// upstream-server-name names one.
func eventsTLS(cfg config.Config) (*tls.Config, error) {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         cfg.UpstreamServerName,
		InsecureSkipVerify: cfg.UpstreamInsecureSkipVerify, //nolint:gosec // only when asked for, with a warning
	}
	if cfg.UpstreamCA != "" {
		pem, err := os.ReadFile(cfg.UpstreamCA)
		if err != nil {
			return nil, fmt.Errorf("events: upstream-ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("events: upstream-ca: %s: no PEM certificate in it", cfg.UpstreamCA)
		}
	}
	if cfg.UpstreamCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.UpstreamCert, cfg.UpstreamKey)
		if err != nil {
			return nil, fmt.Errorf("events: upstream-cert: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// instanceID is this instance's id in its records: instance-id, or the
// host name and the listen address.
func instanceID(cfg config.Config) string {
	if cfg.InstanceID != "" {
		return cfg.InstanceID
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return host + "/" + cfg.Listen
}

// serveHooks are what tests change in a server besides its
// configuration. The zero value is serve's.
type serveHooks struct {
	// skew is added to the times this instance publishes to events-topic:
	// a clock that is off (the fleet's skew test).
	skew time.Duration
	// eventsBuffer bounds the records the events publisher buffers; 0
	// means its default.
	eventsBuffer int
	// exchanges are handed each exchange before the journal and the
	// story (without fleet-topic): a pipeline slowed down.
	exchanges []pipeline.ExchangeConsumer
}

// newEventsPublisher is the publisher of events-topic.
func newEventsPublisher(cfg config.Config, hooks serveHooks, log *zap.Logger) (*fleet.Publisher, error) {
	opts, err := eventsClientOpts(cfg, eventsBrokers(cfg))
	if err != nil {
		return nil, err
	}
	p, err := fleet.NewPublisher(fleet.PublisherConfig{
		Topic:      cfg.EventsTopic,
		Instance:   instanceID(cfg),
		Client:     opts,
		Partitions: int32(cfg.EventsPartitions),
		Retention:  cfg.EventsRetention,
		Skew:       hooks.skew,

		MaxBufferedRecords: hooks.eventsBuffer,
	}, log)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	log.Info("publishing exchanges to the events topic", zap.String("events_topic", cfg.EventsTopic),
		zap.Strings("events_brokers", eventsBrokers(cfg)), zap.String("instance_id", instanceID(cfg)))
	return p, nil
}

// fleetOpenTimeout bounds the look at the fleet topic when serve starts.
const fleetOpenTimeout = 15 * time.Second

// openFleetSource follows fleet-topic, created when missing, from the
// records of the last timeline-retain age (the whole topic when it has
// none), logging the instances found silent.
func openFleetSource(ctx context.Context, cfg config.Config, log *zap.Logger) (*fleet.Source, error) {
	opts, err := eventsClientOpts(cfg, eventsBrokers(cfg))
	if err != nil {
		return nil, err
	}
	var since time.Time
	if age := cfg.TimelineRetain.MaxAge; age > 0 {
		since = time.Now().Add(-age)
	}
	flog := log.Named("fleet")
	ctx, cancel := context.WithTimeout(ctx, fleetOpenTimeout)
	defer cancel()
	// A view may start before any instance has published: the topic is
	// created as the instances would create it.
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("serve: fleet-topic: %w", err)
	}
	err = fleet.EnsureTopic(ctx, cl, cfg.FleetTopic, int32(cfg.EventsPartitions), cfg.EventsRetention)
	cl.Close()
	if err != nil {
		return nil, fmt.Errorf("serve: fleet-topic: %w", err)
	}
	src, err := fleet.OpenSource(ctx, fleet.SourceConfig{
		Topic:  cfg.FleetTopic,
		Client: opts,
		Since:  since,
		Follow: true,
		Merge: fleet.MergeConfig{MaxSkew: cfg.MaxSkew, OnGap: func(g fleet.Gap) {
			if g.To.IsZero() {
				flog.Warn("instance went silent (killed, or cut off from the cluster): what it observed since is missing from the fleet's story",
					zap.String("instance_id", g.Instance), zap.Time("last_heard", g.From))
				return
			}
			flog.Info("instance heard again", zap.String("instance_id", g.Instance),
				zap.Time("silent_from", g.From), zap.Time("silent_to", g.To))
		}},
		Log: flog,
	})
	if err != nil {
		return nil, fmt.Errorf("serve: fleet-topic: %w", err)
	}
	log.Info("showing the fleet's story from the events topic", zap.String("fleet_topic", cfg.FleetTopic),
		zap.Strings("events_brokers", eventsBrokers(cfg)), zap.Duration("max_skew", cfg.MaxSkew))
	return src, nil
}
