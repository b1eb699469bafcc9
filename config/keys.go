package config

import (
	"strconv"
	"strings"
)

// Keys of the settings. Each is at once the config file key, the long flag
// name, and (upper-cased, dashes to underscores, KPROXY_ prefix) the
// environment variable: see EnvVar.
const (
	KeyConfig             = "config"
	KeyListen             = "listen"
	KeyUpstream           = "upstream"
	KeyAdvertise          = "advertise"
	KeyBrokerPortBase     = "broker-port-base"
	KeyBrokerListeners    = "broker-listeners"
	KeyTLSCert            = "tls-cert"
	KeyTLSKey             = "tls-key"
	KeyTLSClientCA        = "tls-client-ca"
	KeyTLSReloadInterval  = "tls-reload-interval"
	KeySNIHostPattern     = "sni-host-pattern"
	KeyUpstreamTLS        = "upstream-tls"
	KeyUpstreamCA         = "upstream-ca"
	KeyUpstreamCert       = "upstream-cert"
	KeyUpstreamKey        = "upstream-key"
	KeyUpstreamServerName = "upstream-server-name"
	// KeyUpstreamInsecureSkipVerify turns broker certificate verification
	// off, for tests only.
	KeyUpstreamInsecureSkipVerify = "upstream-insecure-skip-verify"
	KeyMaxFrameSize               = "max-frame-size"
	KeyMaxGroupFrameSize          = "max-group-frame-size"
	KeyDialTimeout                = "dial-timeout"
	KeyShutdownTimeout            = "shutdown-timeout"
	KeyObserverQueue              = "observer-queue"
	KeyObserverQueueBytes         = "observer-queue-bytes"
	KeyMaxObservedFrame           = "max-observed-frame-size"
	KeyMaxBufferedBytes           = "max-buffered-bytes"
	KeyFrameReadTimeout           = "frame-read-timeout"
	KeyMaxConnections             = "max-connections"
	KeyMaxConnsPerIP              = "max-connections-per-ip"
	KeyIdleTimeout                = "idle-timeout"
	KeyJournal                    = "journal"
	KeyJournalFsync               = "journal-fsync"
	KeyJournalSegmentSize         = "journal-segment-size"
	KeyJournalSegmentAge          = "journal-segment-age"
	KeyJournalRetainSize          = "journal-retain-size"
	KeyJournalRetainAge           = "journal-retain-age"
	KeyReport                     = "report"
	KeyStormRebalances            = "storm-rebalances"
	KeyStormWindow                = "storm-window"
	KeyTimelineRetain             = "timeline-retain"
	KeyAdmin                      = "admin"
	KeyAdminHosts                 = "admin-hosts"
	KeyAdminTokenFile             = "admin-token-file"
	// KeyAdminToken, like KeyUpstreamSASLPassword, is read only from its
	// environment variable, KPROXY_ADMIN_TOKEN.
	KeyAdminToken       = "admin-token"
	KeyMetricsMaxGroups = "metrics-max-groups"
	KeyLogFormat        = "log-format"
	KeyLogLevel         = "log-level"

	KeyUpstreamSASLMechanism    = "upstream-sasl-mechanism"
	KeyUpstreamSASLUsername     = "upstream-sasl-username"
	KeyUpstreamSASLPasswordFile = "upstream-sasl-password-file"
	// KeyUpstreamSASLPassword is read only from its environment variable,
	// KPROXY_UPSTREAM_SASL_PASSWORD: a flag would show in ps, and a config
	// file key would invite passwords into files meant to be shared.
	KeyUpstreamSASLPassword = "upstream-sasl-password"
	KeyAllowOpenSASLProxy   = "allow-open-sasl-proxy"
)

// EnvPrefix is the prefix of every environment variable kproxy reads.
const EnvPrefix = "KPROXY"

// EnvVar is the environment variable of key: "max-frame-size" is
// KPROXY_MAX_FRAME_SIZE.
func EnvVar(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// Option describes one setting for flags, defaults and documentation.
type Option struct {
	// Key is the setting's name: a Key* constant.
	Key string
	// Flag is false for settings only the config file and the
	// environment can carry.
	Flag bool
	// EnvOnly marks a setting only its environment variable can carry
	// (a secret): no flag, no config file key.
	EnvOnly bool
	// Default is the default as text, "" when there is none.
	Default string
	// Usage is a one-line description.
	Usage string
}

// EnvVar is the option's environment variable.
func (o Option) EnvVar() string { return EnvVar(o.Key) }

// Options lists every setting of `kproxy serve`, in the order of the help
// text and the README's configuration reference. The config option itself
// is first: it is a flag and an environment variable, never a file key.
func Options() []Option {
	d := Default()
	return append([]Option{
		{Key: KeyConfig, Flag: true,
			Usage: "configuration file (YAML, JSON or TOML); its keys are the flag names"},
		{Key: KeyUpstream, Flag: true,
			Usage: "seed brokers, HOST:PORT[,HOST:PORT] (required)"},
		{Key: KeyListen, Flag: true, Default: d.Listen,
			Usage: "bootstrap listener clients are seeded with, HOST:PORT"},
		{Key: KeyAdvertise, Flag: true,
			Usage: "host put in rewritten broker addresses (containers, NAT); empty means the host of --listen; not with --sni-host-pattern, which names the brokers itself"},
		{Key: KeyBrokerPortBase, Flag: true, Default: strconv.Itoa(d.BrokerPortBase),
			Usage: "upstream node N gets a listener on port BASE+N, on the host of --listen; 0 means the --listen port + 1; not with --sni-host-pattern, which serves every broker on the --listen port"},
		{Key: KeyBrokerListeners,
			Usage: "node id to listener HOST:PORT, overriding --broker-port-base for that node (env: ID=HOST:PORT,...)"},
		{Key: KeyTLSCert, Flag: true,
			Usage: "PEM certificate (chain allowed) of every listener: with it, clients must speak TLS to kproxy; reloaded when the file changes or on SIGHUP"},
		{Key: KeyTLSKey, Flag: true,
			Usage: "PEM private key of --tls-cert (read, never logged)"},
		{Key: KeyTLSClientCA, Flag: true,
			Usage: "PEM CA certificates: clients must present a certificate signed by one of them (mutual TLS); empty means no client certificate needed"},
		{Key: KeyTLSReloadInterval, Flag: true, Default: formatDuration(d.TLSReloadInterval),
			Usage: "how often the TLS files of both sides (--tls-cert, --tls-key, --tls-client-ca; --upstream-ca, --upstream-cert, --upstream-key) are checked for changes"},
		{Key: KeySNIHostPattern, Flag: true,
			Usage: "serve every broker on the --listen port by TLS server name: node N is advertised as the pattern with $(nodeId) replaced by N, e.g. broker-$(nodeId).kproxy.example.com; needs --tls-cert covering those names (a wildcard)"},
		{Key: KeyUpstreamTLS, Flag: true, Default: strconv.FormatBool(d.UpstreamTLS),
			Usage: "dial the brokers with TLS, verifying on each connection the host name that broker advertises"},
		{Key: KeyUpstreamCA, Flag: true,
			Usage: "PEM CA certificates broker certificates must be signed by; empty means the system roots"},
		{Key: KeyUpstreamCert, Flag: true,
			Usage: "PEM client certificate kproxy presents to the brokers (mutual TLS)"},
		{Key: KeyUpstreamKey, Flag: true,
			Usage: "PEM private key of --upstream-cert (read, never logged)"},
		{Key: KeyUpstreamServerName, Flag: true,
			Usage: "name to verify in every broker certificate instead of the host each broker advertises"},
		{Key: KeyUpstreamInsecureSkipVerify, Flag: true, Default: strconv.FormatBool(d.UpstreamInsecureSkipVerify),
			Usage: "do not verify broker certificates: for tests only; warned about at start and on /healthz"},
		{Key: KeyUpstreamSASLMechanism, Flag: true,
			Usage: "kproxy authenticates every broker connection itself, so clients need no SASL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty means clients authenticate as themselves"},
		{Key: KeyUpstreamSASLUsername, Flag: true,
			Usage: "user kproxy authenticates as (with --upstream-sasl-mechanism)"},
		{Key: KeyUpstreamSASLPasswordFile, Flag: true,
			Usage: "file holding that user's password (a trailing newline is ignored); or set KPROXY_UPSTREAM_SASL_PASSWORD"},
		{Key: KeyUpstreamSASLPassword, EnvOnly: true,
			Usage: "that user's password, from the environment only (never a flag or file key); or use --upstream-sasl-password-file"},
		{Key: KeyAllowOpenSASLProxy, Flag: true, Default: strconv.FormatBool(d.AllowOpenSASLProxy),
			Usage: "let kproxy authenticate upstream for clients on listeners other hosts can reach without client certificates (anyone who connects acts as that user)"},
		{Key: KeyMaxFrameSize, Flag: true, Default: formatSize(int64(d.MaxFrameSize)),
			Usage: "largest request, or response kproxy reads whole (all but streamed ones such as Fetch), accepted; a larger one closes its connection (bytes, or KiB/MiB/GiB)"},
		{Key: KeyMaxGroupFrameSize, Flag: true, Default: formatSize(int64(d.MaxGroupFrameSize)),
			Usage: "largest group request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, FindCoordinator, ConsumerGroupHeartbeat) accepted, far above what real groups send; a larger one closes its connection before any of it reaches the broker (bytes, or KiB/MiB/GiB)"},
		{Key: KeyDialTimeout, Flag: true, Default: formatDuration(d.DialTimeout),
			Usage: "timeout of each connection attempt to a broker"},
		{Key: KeyShutdownTimeout, Flag: true, Default: formatDuration(d.ShutdownTimeout),
			Usage: "on SIGINT/SIGTERM, how long in-flight requests may take before connections close"},
		{Key: KeyObserverQueue, Flag: true, Default: strconv.Itoa(d.ObserverQueue),
			Usage: "exchanges queued for the pipeline (log, journal, timeline) before new ones are dropped"},
		{Key: KeyObserverQueueBytes, Flag: true, Default: formatSize(d.ObserverQueueBytes),
			Usage: "bytes of request and response frames queued for the pipeline before new exchanges are dropped (bytes, or KiB/MiB/GiB)"},
		{Key: KeyMaxObservedFrame, Flag: true, Default: formatSize(int64(d.MaxObservedFrameSize)),
			Usage: "largest group request or response kept for the timeline and journal; a larger one is forwarded unobserved, counted and marked (bytes, or KiB/MiB/GiB)"},
		{Key: KeyMaxBufferedBytes, Flag: true, Default: formatSize(d.MaxBufferedBytes),
			Usage: "bytes of group requests and responses held in memory at once, all connections together; when spent, reading from clients pauses and group responses are forwarded unobserved (bytes, or KiB/MiB/GiB)"},
		{Key: KeyFrameReadTimeout, Flag: true, Default: formatDuration(d.FrameReadTimeout),
			Usage: "a client sending a request kproxy reads whole (group APIs) more slowly than this is disconnected"},
		{Key: KeyMaxConnections, Flag: true, Default: strconv.Itoa(d.MaxConnections),
			Usage: "client connections served at once, more are refused; 0 means (file-descriptor limit - 256) / 2"},
		{Key: KeyMaxConnsPerIP, Flag: true, Default: strconv.Itoa(d.MaxConnectionsPerIP),
			Usage: "client connections served at once from one IP address, more are refused; 0 means no limit"},
		{Key: KeyIdleTimeout, Flag: true, Default: formatDuration(d.IdleTimeout),
			Usage: "close a client connection with no bytes either way and no request in flight for this long (as Kafka's connections.max.idle.ms)"},
		{Key: KeyJournal, Flag: true,
			Usage: "directory to journal exchanges to; empty means no journal"},
		{Key: KeyJournalFsync, Flag: true, Default: d.JournalOptions.Fsync.String(),
			Usage: "journal durability: always (fsync each batch), never (left to the OS) or the interval between fsyncs"},
		{Key: KeyJournalSegmentSize, Flag: true, Default: formatSize(d.JournalOptions.SegmentBytes),
			Usage: "start a new journal segment before one grows past this size (bytes, or KiB/MiB/GiB)"},
		{Key: KeyJournalSegmentAge, Flag: true, Default: formatDuration(d.JournalOptions.SegmentAge),
			Usage: "start a new journal segment when the current one is older than this; 0 means never by age"},
		{Key: KeyJournalRetainSize, Flag: true, Default: formatSize(d.JournalOptions.RetainBytes),
			Usage: "delete the oldest journal segments while the directory holds more than this; 0 means no limit"},
		{Key: KeyJournalRetainAge, Flag: true, Default: formatDuration(d.JournalOptions.RetainAge),
			Usage: "delete journal segments last written longer ago than this; 0 means no limit"},
		{Key: KeyReport, Flag: true,
			Usage: "file the JSON timeline report is written to (mode 0600) when serve stops; empty means none"},
		{Key: KeyStormRebalances, Flag: true, Default: strconv.Itoa(d.StormRebalances),
			Usage: "a group rebalancing this many times within --storm-window is in a storm"},
		{Key: KeyStormWindow, Flag: true, Default: formatDuration(d.StormWindow),
			Usage: "sliding window of storm detection"},
		{Key: KeyTimelineRetain, Flag: true, Default: d.TimelineRetain.String(),
			Usage: "live timeline history kept in memory, GENERATIONS,AGE: the last GENERATIONS generations of each group (at least 4), none that ended more than AGE ago, and no group quiet for AGE; 0 means no limit. Older history stays in the journal, which the admin API reads for it"},
		{Key: KeyAdmin, Flag: true, Default: d.Admin,
			Usage: "admin HTTP address serving the web page (/), /metrics, /healthz, /readyz, /timeline and /api/; empty means off"},
		{Key: KeyAdminHosts, Flag: true,
			Usage: "host names the admin server answers to besides IP addresses, localhost and --advertise's; a request naming another is refused (DNS rebinding)"},
		{Key: KeyAdminTokenFile, Flag: true,
			Usage: "file holding the bearer token every admin request but /healthz and /readyz must carry (a browser opens /?token=TOKEN once); or set KPROXY_ADMIN_TOKEN"},
		{Key: KeyAdminToken, EnvOnly: true,
			Usage: "that bearer token, from the environment only (never a flag or file key); or use --admin-token-file"},
		{Key: KeyMetricsMaxGroups, Flag: true, Default: strconv.Itoa(d.MetricsMaxGroups),
			Usage: `consumer groups /metrics names; the others are summed under group="_other"`},
		{Key: KeyLogFormat, Flag: true, Default: d.LogFormat,
			Usage: "log format: console (for people) or json (for machines)"},
		{Key: KeyLogLevel, Flag: true, Default: d.LogLevel,
			Usage: "log level: debug, info, warn or error; info logs the timeline, kproxy's own life and one line per group exchange except Heartbeat, OffsetCommit, OffsetFetch and TxnOffsetCommit without an error and KIP-848, share and streams group heartbeats that change nothing (debug)"},
	}, fleetOptions()...)
}
