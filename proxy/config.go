package proxy

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Defaults applied by Config.withDefaults for zero fields.
const (
	// DefaultMaxFrameSize is the largest frame accepted in either
	// direction: 100 MiB, the same bound Kafka's socket.request.max.bytes
	// defaults to.
	DefaultMaxFrameSize int32 = 100 << 20
	// DefaultMaxGroupFrameSize is the largest group request accepted
	// (decode.GroupAPI: JoinGroup, SyncGroup, OffsetCommit, ...): 16 MiB.
	// The largest a real consumer sends, even subscribed to 10,000 topics
	// of Kafka's longest names, stays well under it (docs/benchmarks.md,
	// Group request sizes).
	DefaultMaxGroupFrameSize int32 = 16 << 20
	// DefaultDialTimeout bounds each dial to an upstream broker.
	DefaultDialTimeout = 10 * time.Second
	// DefaultShutdownTimeout bounds the wait for in-flight requests when
	// Run's context is done.
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultObserverQueue is how many exchanges may wait for the
	// Queue's reader before new ones are dropped (and counted).
	DefaultObserverQueue = 4096
	// DefaultObserverQueueBytes bounds the frames held by the exchanges
	// waiting in the Queue: 64 MiB.
	DefaultObserverQueueBytes int64 = 64 << 20
	// DefaultMaxObservedFrameSize is the largest frame of interest kept
	// for the observers: 4 MiB. A larger one is streamed, unobserved.
	DefaultMaxObservedFrameSize int32 = 4 << 20
	// DefaultMaxBufferedBytes bounds the bytes of frames of interest
	// being read from clients, across every connection: 256 MiB.
	DefaultMaxBufferedBytes int64 = 256 << 20
	// DefaultFrameReadTimeout bounds the reading of one frame of
	// interest, from its size prefix to its last byte.
	DefaultFrameReadTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a client connection with no bytes in
	// either direction and nothing in flight for this long, as Kafka's
	// connections.max.idle.ms (10 minutes) does.
	DefaultIdleTimeout = 10 * time.Minute
)

// Config configures a Proxy. The zero value of every field but Listen and
// Upstreams means "use the default", as documented per field. The
// mapstructure tags are the keys of `kproxy serve`'s settings
// (config.Config embeds Config); the fields tagged "-" are built from
// several settings or are not settings.
type Config struct {
	// Listen is the bootstrap listener, "host:port". Clients are seeded
	// with it; each connection is forwarded to one of Upstreams. A port of
	// 0 picks a free port (see Proxy.Addr).
	Listen string `mapstructure:"listen"`
	// Upstreams are the seed brokers, "host:port". Bootstrap connections
	// try them in turn, starting after the one used last.
	Upstreams []string `mapstructure:"upstream"`
	// Advertise is the host written into rewritten responses (Metadata,
	// FindCoordinator, DescribeCluster) so that clients dial kproxy. ""
	// means Listen's host, or 127.0.0.1 when that is empty or unspecified
	// (0.0.0.0, ::). Set it when clients reach kproxy through NAT or a
	// container network. It cannot be set with SNIHostPattern, which
	// advertises host names of its own.
	Advertise string `mapstructure:"advertise"`
	// BrokerPortBase places the listener of broker node N at port
	// BrokerPortBase+N on Listen's host. 0 means Listen's port + 1 (the
	// port actually bound when Listen's port is 0). A node whose port
	// would be above 65535, and that BrokerListeners does not name, is
	// refused: logged once, counted (Stats.NodesRefused), and never shown
	// to clients (left out of Metadata and DescribeCluster; FindCoordinator
	// answers COORDINATOR_NOT_AVAILABLE for it).
	BrokerPortBase int `mapstructure:"broker-port-base"`
	// BrokerListeners maps a node id to its listener, "host:port",
	// overriding BrokerPortBase for that node. A port of 0 picks a free
	// port; the advertised port is always the one actually bound.
	BrokerListeners map[int32]string `mapstructure:"broker-listeners"`
	// MaxFrameSize is the largest frame kproxy accepts, in bytes, not
	// counting the 4-byte size: every request, and every response kproxy
	// reads whole (those it rewrites or observes). A larger one closes its
	// connection with a log line instead of being read. Responses kproxy
	// streams (Fetch, Produce, ...) are not held in memory and not limited,
	// as on a direct connection. 0 means DefaultMaxFrameSize.
	MaxFrameSize int32 `mapstructure:"max-frame-size"`
	// MaxGroupFrameSize is the largest group request (decode.GroupAPI)
	// kproxy accepts, in bytes, not counting the 4-byte size: a larger
	// one closes its connection before any of it reaches the broker,
	// whose group coordinator a request of hundreds of megabytes keeps
	// busy. Above MaxFrameSize, MaxFrameSize applies. 0 means
	// DefaultMaxGroupFrameSize.
	MaxGroupFrameSize int32 `mapstructure:"max-group-frame-size"`
	// DialTimeout bounds each dial to a broker, and each of the two
	// requests of broker discovery. 0 means DefaultDialTimeout. Shutdown
	// does not wait for it: dials under way stop when Run's context is
	// done.
	DialTimeout time.Duration `mapstructure:"dial-timeout"`
	// ShutdownTimeout bounds how long Run waits, once its context is done,
	// for requests already forwarded to get their responses. 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration `mapstructure:"shutdown-timeout"`
	// ObserverQueue is the capacity, in exchanges, of the queue between
	// the traffic and the pipeline (Queue). 0 means DefaultObserverQueue.
	ObserverQueue int `mapstructure:"observer-queue"`
	// ObserverQueueBytes bounds the bytes (request and response frames)
	// of the exchanges in that queue, so that a slow pipeline and large
	// observed frames (Metadata of big clusters, OffsetCommit of many
	// partitions) cannot grow memory without bound. An exchange that would
	// pass it is dropped and counted, unless the queue holds nothing. 0
	// means DefaultObserverQueueBytes.
	ObserverQueueBytes int64 `mapstructure:"observer-queue-bytes"`
	// MaxObservedFrameSize is the largest request or response of interest
	// (decode.Observed) kproxy keeps for its observers, in bytes without
	// the 4-byte size. A larger one is streamed through like a Produce,
	// never held whole, counted (Stats.UnobservedFrames), and handed to
	// the observers without its frames, marked decode.Exchange.Oversized.
	// Responses kproxy rewrites are read whole up to MaxFrameSize. 0
	// means DefaultMaxObservedFrameSize.
	MaxObservedFrameSize int32 `mapstructure:"max-observed-frame-size"`
	// MaxBufferedBytes bounds the bytes of frames read whole (requests and
	// responses of interest, responses kproxy rewrites) held across every
	// connection, from the first byte read until the exchange is handed
	// to the observers. When it is spent, connections needing more for a
	// request stop reading from their clients until some is released,
	// instead of allocating; a response of interest is streamed
	// unobserved instead (counted in Stats.UnobservedFrames), and a
	// response kproxy rewrites, which must be whole, is read anyway and
	// overdraws it, so that a response never waits for bytes held by
	// requests awaiting responses. 0 means DefaultMaxBufferedBytes.
	MaxBufferedBytes int64 `mapstructure:"max-buffered-bytes"`
	// FrameReadTimeout bounds the reading of one request frame of
	// interest, from its size prefix to its last byte, waiting for the
	// buffer budget included; a client slower than that is disconnected.
	// 0 means DefaultFrameReadTimeout.
	FrameReadTimeout time.Duration `mapstructure:"frame-read-timeout"`
	// MaxConnections is the most client connections served at once; more
	// are accepted and closed at once (counted, logged at most once a
	// second). 0 means a default derived from the file-descriptor limit
	// (DefaultMaxConnections).
	MaxConnections int `mapstructure:"max-connections"`
	// MaxConnectionsPerIP is the most client connections served at once
	// from one IP address. 0 means no limit.
	MaxConnectionsPerIP int `mapstructure:"max-connections-per-ip"`
	// IdleTimeout closes a client connection that moved no byte in either
	// direction, with no request in flight, for this long. 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration `mapstructure:"idle-timeout"`
	// Reserved names addresses other parts of kproxy listen on, by their
	// configuration key ("admin": "127.0.0.1:9644"), so that a broker
	// listener placed on one of them is reported as a collision naming
	// both keys (CheckListeners). Nil means none.
	Reserved map[string]string `mapstructure:"-"`
	// DisableBrokerDiscovery turns off broker discovery. With discovery on
	// (the default, false), Run asks a seed broker for Metadata at startup
	// (ApiVersions, then Metadata without topics), opens a listener for
	// every broker node at once, and retries in the background with
	// backoff until it succeeds; a failure is logged, never fatal. Without
	// it, a node's listener opens only when a client's Metadata,
	// FindCoordinator or DescribeCluster response names the node, so
	// clients that kept kproxy's node addresses across a kproxy restart
	// cannot reconnect until they bootstrap again. Turn it off only when
	// the upstream is not a Kafka broker (tests with a fake upstream).
	DisableBrokerDiscovery bool `mapstructure:"-"`
	// TLS, when not nil, makes every listener speak TLS (tls.go). Nil
	// means plaintext listeners.
	TLS *ListenerTLS `mapstructure:"-"`
	// UpstreamTLS, when not nil, makes kproxy dial brokers with TLS
	// (tls.go). Nil means plaintext to the brokers.
	UpstreamTLS *UpstreamTLS `mapstructure:"-"`
	// SNIHostPattern, when set, serves every broker node on the bootstrap
	// listener: node N is advertised as the host name the pattern gives
	// with NodeIDPlaceholder replaced by N, at the bootstrap port, and
	// each TLS connection goes to the node whose name the client asked
	// for (SNI); another name goes to a seed broker. No node listeners are
	// opened. It needs TLS, whose certificate must cover the names (a
	// wildcard), and excludes BrokerListeners and Advertise (the pattern
	// names the hosts). "" means one listener per node.
	SNIHostPattern string `mapstructure:"sni-host-pattern"`
	// UpstreamSASL, when its Mechanism is set, makes kproxy authenticate
	// every upstream connection with its own credentials, so that clients
	// need none (upstreamsasl.go); a client's own SASL request then closes
	// its connection. The zero value forwards clients' SASL exchanges.
	UpstreamSASL UpstreamSASL `mapstructure:"-"`
	// AllowOpenSASLProxy lets kproxy authenticate upstream for clients on
	// listeners that other hosts can reach. Without it, New refuses
	// UpstreamSASL unless every listener is on a loopback address:
	// anyone who can connect would use kproxy's credentials.
	AllowOpenSASLProxy bool `mapstructure:"allow-open-sasl-proxy"`
}

// withDefaults returns c with every zero field set to its default. It is
// the one place defaults are applied.
func (c Config) withDefaults() Config {
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if c.MaxGroupFrameSize == 0 {
		c.MaxGroupFrameSize = DefaultMaxGroupFrameSize
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.ObserverQueue == 0 {
		c.ObserverQueue = DefaultObserverQueue
	}
	if c.ObserverQueueBytes == 0 {
		c.ObserverQueueBytes = DefaultObserverQueueBytes
	}
	if c.MaxObservedFrameSize == 0 {
		c.MaxObservedFrameSize = DefaultMaxObservedFrameSize
	}
	if c.MaxBufferedBytes == 0 {
		c.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if c.FrameReadTimeout == 0 {
		c.FrameReadTimeout = DefaultFrameReadTimeout
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections()
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	return c
}

// validate reports the first setting that cannot work, naming it.
func (c Config) validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("proxy: listen %q: %w", c.Listen, err)
	}
	if len(c.Upstreams) == 0 {
		return errors.New("proxy: upstreams: at least one seed broker is required")
	}
	for _, u := range c.Upstreams {
		if err := checkPort(u); err != nil {
			return fmt.Errorf("proxy: upstream %q: %w", u, err)
		}
	}
	for id, addr := range c.BrokerListeners {
		if err := checkPort(addr); err != nil {
			return fmt.Errorf("proxy: broker listener for node %d %q: %w", id, addr, err)
		}
	}
	if c.BrokerPortBase < 0 || c.BrokerPortBase > 65535 {
		return fmt.Errorf("proxy: broker port base %d: out of range 0-65535", c.BrokerPortBase)
	}
	if c.MaxGroupFrameSize < 0 {
		return fmt.Errorf("proxy: max group frame size %d: must be positive", c.MaxGroupFrameSize)
	}
	if c.MaxFrameSize < 0 {
		return fmt.Errorf("proxy: max frame size %d: must be positive", c.MaxFrameSize)
	}
	if c.DialTimeout < 0 || c.ShutdownTimeout < 0 {
		return errors.New("proxy: dial and shutdown timeouts must not be negative")
	}
	if c.ObserverQueue < 0 {
		return fmt.Errorf("proxy: observer queue %d: must not be negative", c.ObserverQueue)
	}
	if c.ObserverQueueBytes < 0 {
		return fmt.Errorf("proxy: observer queue bytes %d: must not be negative", c.ObserverQueueBytes)
	}
	if c.MaxObservedFrameSize < 0 || c.MaxBufferedBytes < 0 {
		return errors.New("proxy: max observed frame size and max buffered bytes must not be negative")
	}
	// A frame of interest must fit in the budget, or it would wait for
	// it until its deadline.
	if d := c.withDefaults(); d.MaxBufferedBytes < 2*int64(d.MaxObservedFrameSize) {
		return fmt.Errorf("proxy: max buffered bytes %d: below twice the max observed frame size %d", d.MaxBufferedBytes, d.MaxObservedFrameSize)
	}
	if c.FrameReadTimeout < 0 || c.IdleTimeout < 0 {
		return errors.New("proxy: frame read and idle timeouts must not be negative")
	}
	if c.MaxConnections < 0 || c.MaxConnectionsPerIP < 0 {
		return errors.New("proxy: max connections and max connections per ip must not be negative")
	}
	if c.TLS != nil && (c.TLS.CertFile == "" || c.TLS.KeyFile == "") {
		return errors.New("proxy: tls: a certificate and its key are both required")
	}
	if c.SNIHostPattern != "" {
		if c.TLS == nil {
			return errors.New("proxy: sni-host-pattern: routing by server name needs TLS on the listeners")
		}
		if len(c.BrokerListeners) > 0 {
			return errors.New("proxy: sni-host-pattern: every node is served on the bootstrap listener; broker listeners cannot be set too")
		}
		if c.Advertise != "" {
			return fmt.Errorf("proxy: sni-host-pattern: every node is advertised as the pattern's host name; advertise (%q) cannot be set too", c.Advertise)
		}
	}
	if err := c.UpstreamSASL.validate(); err != nil {
		return err
	}
	return c.checkOpenSASLProxy()
}

// checkPort checks that addr is "host:port" with a numeric port.
func checkPort(addr string) error {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if port, err := strconv.Atoi(p); err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("port %q is not a number in 0-65535", p)
	}
	return nil
}

// advertiseHost is the host clients are told to dial.
func (c Config) advertiseHost() string {
	if c.Advertise != "" {
		return c.Advertise
	}
	if c.listensEverywhere() {
		return "127.0.0.1"
	}
	host, _, _ := net.SplitHostPort(c.Listen)
	return host
}

// listensEverywhere reports whether Listen's host is empty or unspecified
// (0.0.0.0, ::): every interface.
func (c Config) listensEverywhere() bool {
	host, _, _ := net.SplitHostPort(c.Listen)
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// advertiseGuessed reports whether kproxy listens on every interface yet
// tells clients 127.0.0.1 because Advertise is not set: clients on other
// hosts would then dial themselves.
func (c Config) advertiseGuessed() bool {
	return c.Advertise == "" && c.listensEverywhere()
}
