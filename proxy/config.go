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
)

// Config configures a Proxy. The zero value of every field but Listen and
// Upstreams means "use the default", as documented per field.
type Config struct {
	// Listen is the bootstrap listener, "host:port". Clients are seeded
	// with it; each connection is forwarded to one of Upstreams. A port of
	// 0 picks a free port (see Proxy.Addr).
	Listen string
	// Upstreams are the seed brokers, "host:port". Bootstrap connections
	// try them in turn, starting after the one used last.
	Upstreams []string
	// Advertise is the host written into rewritten responses (Metadata,
	// FindCoordinator, DescribeCluster) so that clients dial kproxy. ""
	// means Listen's host, or 127.0.0.1 when that is empty or unspecified
	// (0.0.0.0, ::). Set it when clients reach kproxy through NAT or a
	// container network.
	Advertise string
	// BrokerPortBase places the listener of broker node N at port
	// BrokerPortBase+N on Listen's host. 0 means Listen's port + 1 (the
	// port actually bound when Listen's port is 0). A node whose port
	// would be above 65535, and that BrokerListeners does not name, is
	// refused: logged once, counted (Stats.NodesRefused), and never shown
	// to clients (left out of Metadata and DescribeCluster; FindCoordinator
	// answers COORDINATOR_NOT_AVAILABLE for it).
	BrokerPortBase int
	// BrokerListeners maps a node id to its listener, "host:port",
	// overriding BrokerPortBase for that node. A port of 0 picks a free
	// port; the advertised port is always the one actually bound.
	BrokerListeners map[int32]string
	// MaxFrameSize is the largest frame kproxy accepts, in bytes, not
	// counting the 4-byte size: every request, and every response kproxy
	// reads whole (those it rewrites or observes). A larger one closes its
	// connection with a log line instead of being read. Responses kproxy
	// streams (Fetch, Produce, ...) are not held in memory and not limited,
	// as on a direct connection. 0 means DefaultMaxFrameSize.
	MaxFrameSize int32
	// DialTimeout bounds each dial to a broker, and each of the two
	// requests of broker discovery. 0 means DefaultDialTimeout. Shutdown
	// does not wait for it: dials under way stop when Run's context is
	// done.
	DialTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits, once its context is done,
	// for requests already forwarded to get their responses. 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// ObserverQueue is the capacity, in exchanges, of the queue between
	// the traffic and the pipeline (Queue). 0 means DefaultObserverQueue.
	ObserverQueue int
	// ObserverQueueBytes bounds the bytes (request and response frames)
	// of the exchanges in that queue, so that a slow pipeline and large
	// observed frames (Metadata of big clusters, OffsetCommit of many
	// partitions) cannot grow memory without bound. An exchange that would
	// pass it is dropped and counted, unless the queue holds nothing. 0
	// means DefaultObserverQueueBytes.
	ObserverQueueBytes int64
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
	DisableBrokerDiscovery bool
}

// withDefaults returns c with every zero field set to its default. It is
// the one place defaults are applied.
func (c Config) withDefaults() Config {
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = DefaultMaxFrameSize
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
	return nil
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
