// Package config holds the configuration of `kproxy serve`: the Config
// struct, its defaults, validation whose messages name the key at fault, and
// loading through viper from flags, KPROXY_* environment variables and a
// YAML (or JSON, TOML) file. Only this package and cmd/ import viper; the
// other packages take plain structs built from a Config.
package config

import (
	"time"

	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/proxy"
	"github.com/kproxy-dev/kproxy/timeline"
)

// Timeline is the timeline's part of the configuration: the storm
// settings (storm-rebalances, storm-window). Config embeds it, so that
// cfg.Timeline is what serve hands to the story, with the fields built in
// code (OnEntry, PublishEvery) set.
type Timeline = timeline.Config

// Proxy is the proxy's part of the configuration. Config embeds it, so
// that its settings read as serve's own (cfg.Listen) and cfg.Proxy is what
// serve hands to proxy.New once it has set the fields built from several
// settings (TLS, UpstreamTLS, UpstreamSASL, Reserved).
type Proxy = proxy.Config

// Config is the whole configuration of `kproxy serve`. Each setting is the
// field whose mapstructure tag is its key; the fields of the owners'
// structs (Proxy, JournalOptions) are documented there. Every field holds
// its value as the owner reads it, with nothing translated on the way: a
// 0 means what it means to the owner (no limit for the journal's segment
// age and retention and for max-connections-per-ip). The zero value is not
// useful: start from Default, which sets every default explicitly, or use
// Load.
type Config struct {
	// Proxy holds listen, upstream, advertise, the broker listeners and
	// the limits of the traffic (sizes, timeouts, connections).
	Proxy `mapstructure:",squash"`

	// TLSCert and TLSKey are the PEM certificate (with its chain) and key
	// of every listener; "" (both) means plaintext listeners.
	TLSCert string `mapstructure:"tls-cert"`
	TLSKey  string `mapstructure:"tls-key"`
	// TLSClientCA, when set, makes clients present a certificate signed by
	// one of its CAs.
	TLSClientCA string `mapstructure:"tls-client-ca"`
	// TLSReloadInterval is how often the TLS files of both sides (the
	// listeners' and the upstream ones) are checked for changes.
	TLSReloadInterval time.Duration `mapstructure:"tls-reload-interval"`
	// UpstreamTLS dials the brokers with TLS. It shadows Proxy.UpstreamTLS,
	// which serve builds from it and the Upstream* files.
	UpstreamTLS bool `mapstructure:"upstream-tls"`
	// UpstreamCA is the PEM file of the CAs broker certificates must be
	// signed by; "" means the system roots.
	UpstreamCA string `mapstructure:"upstream-ca"`
	// UpstreamCert and UpstreamKey are kproxy's client certificate for the
	// brokers; "" (both) means none.
	UpstreamCert string `mapstructure:"upstream-cert"`
	UpstreamKey  string `mapstructure:"upstream-key"`
	// UpstreamServerName overrides the name verified in broker
	// certificates; "" means the host each broker advertises.
	UpstreamServerName string `mapstructure:"upstream-server-name"`
	// UpstreamInsecureSkipVerify turns broker certificate verification
	// off. Tests only.
	UpstreamInsecureSkipVerify bool `mapstructure:"upstream-insecure-skip-verify"`

	// Journal is the directory exchanges are journaled to; "" means off.
	Journal string `mapstructure:"journal"`
	// JournalOptions are the journal's fsync policy, segment size and age,
	// and retention (journal-fsync, journal-segment-*, journal-retain-*).
	JournalOptions journal.Options `mapstructure:",squash"`
	// Report is the file the JSON timeline report is written to when serve
	// stops; "" means none.
	Report string `mapstructure:"report"`
	// Timeline holds the storm settings.
	Timeline `mapstructure:",squash"`
	// TimelineRetain is how much of the live timeline is kept in memory
	// (see timeline.Retention).
	TimelineRetain timeline.Retention `mapstructure:"timeline-retain"`
	// Admin is the admin HTTP server's address (/metrics, /healthz); ""
	// means off. Loopback by default.
	Admin string `mapstructure:"admin"`
	// AdminHosts are the host names, besides IP addresses, localhost and
	// Advertise's, that a request to the admin server may give in its Host
	// header; the others are refused (DNS rebinding).
	AdminHosts []string `mapstructure:"admin-hosts"`
	// AdminTokenFile names the file Load reads AdminToken from.
	AdminTokenFile string `mapstructure:"admin-token-file"`
	// AdminToken, when set, is the bearer token every admin request but
	// the probes must carry; from AdminTokenFile or KPROXY_ADMIN_TOKEN.
	AdminToken Secret `mapstructure:"-"`
	// MetricsMaxGroups is how many consumer groups /metrics names; the
	// others are summed under group="_other".
	MetricsMaxGroups int `mapstructure:"metrics-max-groups"`
	// LogFormat is "console" (for people) or "json" (for machines).
	LogFormat string `mapstructure:"log-format"`
	// LogLevel is "debug", "info", "warn" or "error".
	LogLevel string `mapstructure:"log-level"`

	// UpstreamSASLMechanism, when set (PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512), makes kproxy authenticate every broker connection
	// as UpstreamSASLUsername, so that clients need no SASL. "" means
	// clients authenticate as themselves, through kproxy.
	UpstreamSASLMechanism string `mapstructure:"upstream-sasl-mechanism"`
	// UpstreamSASLUsername is the user kproxy authenticates as.
	UpstreamSASLUsername string `mapstructure:"upstream-sasl-username"`
	// UpstreamSASLPasswordFile names the file Load reads the password
	// from, when KPROXY_UPSTREAM_SASL_PASSWORD does not give it.
	UpstreamSASLPasswordFile string `mapstructure:"upstream-sasl-password-file"`
	// UpstreamSASLPassword is the password, from
	// KPROXY_UPSTREAM_SASL_PASSWORD or the password file; never a flag or
	// a config file key.
	UpstreamSASLPassword Secret `mapstructure:"-"`

	// Fleet is the events topic's settings (fleet.go).
	Fleet `mapstructure:",squash"`

	// certs are the certificates validation read, for Warnings.
	certs []certFile
	// unknownEnv are Load's warnings about KPROXY_* variables that are no
	// setting's, for Warnings.
	unknownEnv []string
}

// Default values of the settings that have one. Those of the proxy, the
// journal and the timeline are their packages' own, so that serve and
// those packages agree; the typed ones are serve's own (no package below
// has a default constant for them; a 0 max-connections is the one the
// proxy works out from the file-descriptor limit). Options renders each into the
// help text and the README from these values.
const (
	DefaultListen             string = "127.0.0.1:19092"
	DefaultBrokerPortBase     int    = 0 // the port after Listen's
	DefaultTLSReloadInterval         = proxy.DefaultTLSReloadInterval
	DefaultMaxFrameSize              = proxy.DefaultMaxFrameSize      // 100 MiB
	DefaultMaxGroupFrameSize         = proxy.DefaultMaxGroupFrameSize // 16 MiB
	DefaultDialTimeout               = proxy.DefaultDialTimeout
	DefaultShutdownTimeout           = proxy.DefaultShutdownTimeout
	DefaultObserverQueue             = proxy.DefaultObserverQueue
	DefaultObserverQueueBytes        = proxy.DefaultObserverQueueBytes   // 64 MiB
	DefaultMaxObservedFrame          = proxy.DefaultMaxObservedFrameSize // 4 MiB
	DefaultMaxBufferedBytes          = proxy.DefaultMaxBufferedBytes     // 256 MiB
	DefaultFrameReadTimeout          = proxy.DefaultFrameReadTimeout
	DefaultMaxConnections     int    = 0 // from the file-descriptor limit (proxy.DefaultMaxConnections)
	DefaultMaxConnsPerIP      int    = 0 // no limit
	DefaultIdleTimeout               = proxy.DefaultIdleTimeout
	DefaultJournalFsync              = journal.Fsync(journal.DefaultFsyncInterval)
	DefaultJournalSegmentSize        = journal.DefaultSegmentBytes // 64 MiB
	DefaultJournalSegmentAge         = journal.DefaultSegmentAge
	DefaultJournalRetainSize         = journal.DefaultRetainBytes // 1 GiB
	DefaultJournalRetainAge          = journal.DefaultRetainAge
	DefaultStormRebalances           = timeline.DefaultStormRebalances
	DefaultStormWindow               = timeline.DefaultStormWindow
	DefaultAdmin              string = "127.0.0.1:9644"
	DefaultMetricsMaxGroups   int    = 1000
	DefaultLogFormat          string = "console"
	DefaultLogLevel           string = "info"
)

// DefaultTimelineRetain is the timeline's own default.
var DefaultTimelineRetain = timeline.DefaultRetention

// Default returns a Config holding every default. Upstreams is empty: it
// has no default and must be set.
func Default() Config {
	return Config{
		Proxy: proxy.Config{
			Listen:               DefaultListen,
			BrokerPortBase:       DefaultBrokerPortBase,
			MaxFrameSize:         DefaultMaxFrameSize,
			MaxGroupFrameSize:    DefaultMaxGroupFrameSize,
			DialTimeout:          DefaultDialTimeout,
			ShutdownTimeout:      DefaultShutdownTimeout,
			ObserverQueue:        DefaultObserverQueue,
			ObserverQueueBytes:   DefaultObserverQueueBytes,
			MaxObservedFrameSize: DefaultMaxObservedFrame,
			MaxBufferedBytes:     DefaultMaxBufferedBytes,
			FrameReadTimeout:     DefaultFrameReadTimeout,
			MaxConnections:       DefaultMaxConnections,
			MaxConnectionsPerIP:  DefaultMaxConnsPerIP,
			IdleTimeout:          DefaultIdleTimeout,
		},
		TLSReloadInterval: DefaultTLSReloadInterval,
		JournalOptions: journal.Options{
			Fsync:        DefaultJournalFsync,
			SegmentBytes: DefaultJournalSegmentSize,
			SegmentAge:   DefaultJournalSegmentAge,
			RetainBytes:  DefaultJournalRetainSize,
			RetainAge:    DefaultJournalRetainAge,
		},
		Timeline:       Timeline{StormRebalances: DefaultStormRebalances, StormWindow: DefaultStormWindow},
		TimelineRetain: DefaultTimelineRetain,

		Admin:            DefaultAdmin,
		MetricsMaxGroups: DefaultMetricsMaxGroups,
		LogFormat:        DefaultLogFormat,
		LogLevel:         DefaultLogLevel,

		Fleet: defaultFleet(),
	}
}
