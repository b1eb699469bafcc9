package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/kproxy-dev/kproxy/fleet"
)

// Keys of the fleet settings (docs/fleet.md).
const (
	KeyEventsTopic      = "events-topic"
	KeyEventsBrokers    = "events-brokers"
	KeyEventsPartitions = "events-partitions"
	KeyEventsRetention  = "events-retention"
	KeyInstanceID       = "instance-id"
	KeyFleetTopic       = "fleet-topic"
	KeyMaxSkew          = "max-skew"
)

// Defaults of the fleet settings.
const (
	DefaultEventsPartitions = fleet.DefaultPartitions
	// DefaultEventsRetention is serve's own: fleet.EnsureTopic's 0 means
	// the cluster's default, so the fleet package has none to take.
	DefaultEventsRetention time.Duration = 7 * 24 * time.Hour
	DefaultMaxSkew                       = fleet.DefaultMaxSkew
	// MaxMaxSkew bounds max-skew: the merge holds every record this long
	// and more, and clocks further apart than this want fixing (NTP).
	MaxMaxSkew = time.Minute
)

// Fleet is the configuration of the events topic: publishing what this
// instance observes, and showing the merged story of every instance.
type Fleet struct {
	// EventsTopic is the topic every exchange observed is published to;
	// "" means none.
	EventsTopic string `mapstructure:"events-topic"`
	// EventsBrokers are the seed brokers of the cluster holding the
	// events topics (EventsTopic, FleetTopic); nil means Upstreams. They
	// are dialed with the upstream TLS and SASL settings.
	EventsBrokers []string `mapstructure:"events-brokers"`
	// EventsPartitions and EventsRetention are the topic's partition count
	// and retention when kproxy creates it; retention 0 means the
	// cluster's default.
	EventsPartitions int           `mapstructure:"events-partitions"`
	EventsRetention  time.Duration `mapstructure:"events-retention"`
	// InstanceID names this instance in its records; "" means the host
	// name and Listen, "HOST/LISTEN".
	InstanceID string `mapstructure:"instance-id"`
	// FleetTopic, when set, makes the timeline, the web page and /metrics
	// tell the merged story of every instance publishing to it, instead
	// of this instance's own.
	FleetTopic string `mapstructure:"fleet-topic"`
	// MaxSkew is the largest clock offset between instances the merge
	// corrects.
	MaxSkew time.Duration `mapstructure:"max-skew"`
}

// defaultFleet is Fleet's defaults.
func defaultFleet() Fleet {
	return Fleet{EventsPartitions: DefaultEventsPartitions, EventsRetention: DefaultEventsRetention, MaxSkew: DefaultMaxSkew}
}

// fleetOptions are the fleet settings, for Options.
func fleetOptions() []Option {
	d := defaultFleet()
	return []Option{
		{Key: KeyEventsTopic, Flag: true,
			Usage: "publish every exchange observed for the timeline (never SASL) to this topic, created when missing, keyed by group; empty means none (docs/fleet.md)"},
		{Key: KeyEventsBrokers, Flag: true,
			Usage: "seed brokers of the cluster holding events-topic and fleet-topic, HOST:PORT[,HOST:PORT], dialed with the upstream TLS and SASL settings; empty means upstream"},
		{Key: KeyEventsPartitions, Flag: true, Default: strconv.Itoa(d.EventsPartitions),
			Usage: "partitions of events-topic when kproxy creates it"},
		{Key: KeyEventsRetention, Flag: true, Default: formatDuration(d.EventsRetention),
			Usage: "retention of events-topic when kproxy creates it; 0 means the cluster's default"},
		{Key: KeyInstanceID, Flag: true,
			Usage: "this instance's id in the events topic's records; empty means HOSTNAME/LISTEN"},
		{Key: KeyFleetTopic, Flag: true,
			Usage: "show on the timeline, the web page and /metrics the merged story of every instance publishing to this topic (instead of this instance's own)"},
		{Key: KeyMaxSkew, Flag: true, Default: formatDuration(d.MaxSkew),
			Usage: "largest clock offset between instances fleet-topic corrects, learnt from the coordinator's simultaneous answers"},
	}
}

// checkFleet checks the fleet settings; settings that only matter with a
// topic are refused without one, so that a forgotten events-topic does not
// go unnoticed.
func checkFleet(p *problems, f *Fleet) {
	checkTopicName(p, KeyEventsTopic, f.EventsTopic)
	checkTopicName(p, KeyFleetTopic, f.FleetTopic)
	anyTopic := f.EventsTopic != "" || f.FleetTopic != ""
	if len(f.EventsBrokers) > 0 && !anyTopic {
		p.add(KeyEventsBrokers, fmt.Sprint(f.EventsBrokers), "only with events-topic or fleet-topic")
	}
	for _, b := range f.EventsBrokers {
		checkHostPort(p, KeyEventsBrokers, b, true)
	}
	if f.InstanceID != "" && f.EventsTopic == "" {
		p.add(KeyInstanceID, f.InstanceID, "only with events-topic (it names this instance's records)")
	}
	if len(f.InstanceID) > 1024 {
		p.add(KeyInstanceID, f.InstanceID[:32]+"...", "longer than 1024 bytes")
	}
	if f.EventsPartitions < 1 || f.EventsPartitions > 10000 {
		p.add(KeyEventsPartitions, strconv.Itoa(f.EventsPartitions), "out of range (1-10000)")
	}
	checkNotNegative(p, KeyEventsRetention, f.EventsRetention, "the cluster's default")
	if f.MaxSkew <= 0 || f.MaxSkew > MaxMaxSkew {
		p.add(KeyMaxSkew, f.MaxSkew.String(), fmt.Sprintf("out of range (more than 0, at most %s)", MaxMaxSkew))
	}
}

// checkTopicName checks a Kafka topic name: at most 249 of the characters
// a-z A-Z 0-9 . _ - , and neither "." nor "..". Empty is left to the
// caller.
func checkTopicName(p *problems, key, name string) {
	if name == "" {
		return
	}
	if err := TopicNameError(name); err != "" {
		p.add(key, name, err)
	}
}

// TopicNameError says why name is not a valid Kafka topic name, or "" when
// it is.
func TopicNameError(name string) string {
	if name == "." || name == ".." {
		return `"." and ".." are not topic names`
	}
	if len(name) > 249 {
		return "longer than 249 characters"
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("%q is not allowed in a topic name (a-z, A-Z, 0-9, '.', '_', '-')", c)
		}
	}
	return ""
}
