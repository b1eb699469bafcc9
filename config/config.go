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

// Config is the whole configuration of `kproxy serve`. The zero value is not
// useful: start from Default, or use Load.
type Config struct {
	// Listen is the bootstrap listener's address, HOST:PORT. Clients are
	// seeded with it.
	Listen string `mapstructure:"listen"`
	// Upstreams are the seed brokers, HOST:PORT each. Required.
	Upstreams []string `mapstructure:"upstream"`
	// Advertise is the host kproxy puts in the addresses it rewrites, for
	// containers and NAT; "" means the host of Listen.
	Advertise string `mapstructure:"advertise"`
	// BrokerPortBase places the listener of upstream node N on port
	// BrokerPortBase+N (same host as Listen), unless BrokerListeners names
	// that node. 0 means Listen's port + 1.
	BrokerPortBase int `mapstructure:"broker-port-base"`
	// BrokerListeners maps a node id to the HOST:PORT of its listener,
	// overriding BrokerPortBase for that node. Nil means none.
	BrokerListeners map[int32]string `mapstructure:"broker-listeners"`
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
	// SNIHostPattern serves every broker on the Listen port, routed by TLS
	// server name; "" means one listener per broker.
	SNIHostPattern string `mapstructure:"sni-host-pattern"`
	// UpstreamTLS dials the brokers with TLS.
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
	// MaxFrameSize is the largest frame, in bytes, kproxy accepts from a
	// client or a broker; a larger frame closes that connection.
	MaxFrameSize int32 `mapstructure:"max-frame-size"`
	// MaxGroupFrameSize is the largest group request, in bytes, kproxy
	// accepts from a client; a larger one closes that connection.
	MaxGroupFrameSize int32 `mapstructure:"max-group-frame-size"`
	// DialTimeout bounds each connection attempt to an upstream broker.
	DialTimeout time.Duration `mapstructure:"dial-timeout"`
	// ShutdownTimeout bounds how long SIGINT/SIGTERM wait for in-flight
	// requests before connections are closed.
	ShutdownTimeout time.Duration `mapstructure:"shutdown-timeout"`
	// ObserverQueue is how many exchanges may wait for the observers before
	// new ones are dropped (and counted) rather than slow traffic down.
	ObserverQueue int `mapstructure:"observer-queue"`
	// ObserverQueueBytes bounds the bytes of the exchanges waiting for the
	// observers, so that large observed frames behind a slow journal cannot
	// grow memory without bound.
	ObserverQueueBytes int64 `mapstructure:"observer-queue-bytes"`
	// MaxObservedFrameSize is the largest frame of interest kept for the
	// observers; a larger one is forwarded unobserved.
	MaxObservedFrameSize int32 `mapstructure:"max-observed-frame-size"`
	// MaxBufferedBytes bounds the group request and response bytes held
	// in memory across every connection; when spent, reading from clients
	// pauses and group responses are forwarded unobserved.
	MaxBufferedBytes int64 `mapstructure:"max-buffered-bytes"`
	// FrameReadTimeout bounds the reading of one request frame kproxy
	// reads whole.
	FrameReadTimeout time.Duration `mapstructure:"frame-read-timeout"`
	// MaxConnections is the most client connections served at once; 0
	// means derived from the file-descriptor limit.
	MaxConnections int `mapstructure:"max-connections"`
	// MaxConnectionsPerIP is the most client connections served at once
	// from one IP address; 0 means no limit.
	MaxConnectionsPerIP int `mapstructure:"max-connections-per-ip"`
	// IdleTimeout closes client connections idle for this long.
	IdleTimeout time.Duration `mapstructure:"idle-timeout"`
	// Journal is the directory exchanges are journaled to; "" means off.
	Journal string `mapstructure:"journal"`
	// JournalFsync is the journal's durability policy: journal.FsyncAlways,
	// journal.FsyncNever, or the interval between fsyncs.
	JournalFsync journal.Fsync `mapstructure:"journal-fsync"`
	// JournalSegmentSize rotates a journal segment before it grows past
	// this many bytes.
	JournalSegmentSize int64 `mapstructure:"journal-segment-size"`
	// JournalSegmentAge rotates a journal segment older than this; 0 means
	// no rotation by age.
	JournalSegmentAge time.Duration `mapstructure:"journal-segment-age"`
	// JournalRetainSize deletes the oldest segments while the journal
	// directory holds more bytes than this; 0 means no limit.
	JournalRetainSize int64 `mapstructure:"journal-retain-size"`
	// JournalRetainAge deletes segments last written longer ago than this;
	// 0 means no limit.
	JournalRetainAge time.Duration `mapstructure:"journal-retain-age"`
	// Report is the file the JSON timeline report is written to when serve
	// stops; "" means none.
	Report string `mapstructure:"report"`
	// StormRebalances is how many rebalances of one group within
	// StormWindow the timeline calls a storm.
	StormRebalances int `mapstructure:"storm-rebalances"`
	// StormWindow is the sliding window of storm detection.
	StormWindow time.Duration `mapstructure:"storm-window"`
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
	// AllowOpenSASLProxy lets kproxy authenticate upstream for clients
	// on listeners other hosts can reach without a client certificate.
	AllowOpenSASLProxy bool `mapstructure:"allow-open-sasl-proxy"`

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
		Listen:             DefaultListen,
		BrokerPortBase:     DefaultBrokerPortBase,
		TLSReloadInterval:  DefaultTLSReloadInterval,
		MaxFrameSize:       DefaultMaxFrameSize,
		MaxGroupFrameSize:  DefaultMaxGroupFrameSize,
		DialTimeout:        DefaultDialTimeout,
		ShutdownTimeout:    DefaultShutdownTimeout,
		ObserverQueue:      DefaultObserverQueue,
		ObserverQueueBytes: DefaultObserverQueueBytes,

		MaxObservedFrameSize: DefaultMaxObservedFrame,
		MaxBufferedBytes:     DefaultMaxBufferedBytes,
		FrameReadTimeout:     DefaultFrameReadTimeout,
		MaxConnections:       DefaultMaxConnections,
		MaxConnectionsPerIP:  DefaultMaxConnsPerIP,
		IdleTimeout:          DefaultIdleTimeout,

		JournalFsync:       DefaultJournalFsync,
		JournalSegmentSize: DefaultJournalSegmentSize,
		JournalSegmentAge:  DefaultJournalSegmentAge,
		JournalRetainSize:  DefaultJournalRetainSize,
		JournalRetainAge:   DefaultJournalRetainAge,
		StormRebalances:    DefaultStormRebalances,
		StormWindow:        DefaultStormWindow,
		TimelineRetain:     DefaultTimelineRetain,

		Admin:            DefaultAdmin,
		MetricsMaxGroups: DefaultMetricsMaxGroups,
		LogFormat:        DefaultLogFormat,
		LogLevel:         DefaultLogLevel,

		Fleet: defaultFleet(),
	}
}
