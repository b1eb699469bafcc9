package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/journal"
)

// valid is a configuration that passes Validate; each case changes it.
func valid() Config {
	c := Default()
	c.Upstreams = []string{"127.0.0.1:9092"}
	return c
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   []string // every message, in order; nil means valid
	}{
		{"defaults plus upstream", func(c *Config) {}, nil},
		{"ipv6 and hostnames", func(c *Config) {
			c.Listen = "[::1]:0"
			c.Upstreams = []string{"kafka-1.internal:9092", "[fd00::1]:9093"}
			c.Advertise = "proxy.example.com"
			c.Admin = ":9644"
			c.BrokerListeners = map[int32]string{1: "0.0.0.0:29092", 2: "0.0.0.0:29093"}
		}, nil},
		{"admin off", func(c *Config) { c.Admin = "" }, nil},
		{"listen without port", func(c *Config) { c.Listen = "abc" },
			[]string{`config: listen "abc": missing port`}},
		{"listen empty", func(c *Config) { c.Listen = "" },
			[]string{`config: listen: empty; want HOST:PORT`}},
		{"listen bad port", func(c *Config) { c.Listen = "127.0.0.1:http" },
			[]string{`config: listen "127.0.0.1:http": port "http" is not a number in 0-65535`}},
		{"listen port too big", func(c *Config) { c.Listen = ":65536" },
			[]string{`config: listen ":65536": port "65536" is not a number in 0-65535`}},
		{"ipv6 without brackets", func(c *Config) { c.Listen = "::1:9092" },
			[]string{`config: listen "::1:9092": too many colons (write an IPv6 host as [::1]:9092)`}},
		{"no upstream", func(c *Config) { c.Upstreams = nil },
			[]string{`config: upstream: required: at least one seed broker HOST:PORT`}},
		{"upstream without host", func(c *Config) { c.Upstreams = []string{"a:1", ":9092"} },
			[]string{`config: upstream ":9092": missing host`}},
		{"upstream port zero", func(c *Config) { c.Upstreams = []string{"kafka:0"} },
			[]string{`config: upstream "kafka:0": port "0" is not a number in 1-65535`}},
		{"upstream without port", func(c *Config) { c.Upstreams = []string{"kafka"} },
			[]string{`config: upstream "kafka": missing port`}},
		{"advertise with port", func(c *Config) { c.Advertise = "proxy:9092" },
			[]string{`config: advertise "proxy:9092": want a host without a port (ports come from listen and broker-port-base)`}},
		{"advertise with slash", func(c *Config) { c.Advertise = "http://proxy" },
			[]string{`config: advertise "http://proxy": not a host name or IP address`}},
		{"broker port base negative", func(c *Config) { c.BrokerPortBase = -1 },
			[]string{`config: broker-port-base "-1": not a port number (0-65535)`}},
		{"broker port base too big", func(c *Config) { c.BrokerPortBase = 70000 },
			[]string{`config: broker-port-base "70000": not a port number (0-65535)`}},
		{"broker listeners", func(c *Config) {
			c.BrokerListeners = map[int32]string{-1: "h:1", 1: "h:2", 2: "h:2", 3: "h", 4: "h:0", 5: "h:0"}
		}, []string{
			`config: broker-listeners.-1 "h:1": node id must not be negative`,
			`config: broker-listeners.2 "h:2": same address as node 1`,
			`config: broker-listeners.3 "h": missing port`,
		}},
		{"max frame size too small", func(c *Config) { c.MaxFrameSize = 1000 },
			[]string{`config: max-frame-size "1000": below the minimum of 65536 bytes (64KiB)`}},
		{"max group frame size too small", func(c *Config) { c.MaxGroupFrameSize = 1000 },
			[]string{`config: max-group-frame-size "1000": below the minimum of 65536 bytes (64KiB)`}},
		{"timeouts", func(c *Config) { c.DialTimeout = 0; c.ShutdownTimeout = -time.Second },
			[]string{`config: dial-timeout "0s": must be positive`, `config: shutdown-timeout "-1s": must be positive`}},
		{"observer queue", func(c *Config) { c.ObserverQueue = 0 },
			[]string{`config: observer-queue "0": out of range (1-1048576)`}},
		{"observer queue bytes", func(c *Config) { c.ObserverQueueBytes = 1024 },
			[]string{`config: observer-queue-bytes "1024": below the minimum of 65536 bytes (64KiB)`}},
		{"limits", func(c *Config) {
			c.MaxObservedFrameSize = 1000
			c.MaxBufferedBytes = 1000
			c.FrameReadTimeout, c.IdleTimeout = 0, -time.Second
			c.MaxConnections, c.MaxConnectionsPerIP = -1, -2
		}, []string{
			`config: max-observed-frame-size "1000": below the minimum of 65536 bytes (64KiB)`,
			`config: max-buffered-bytes "1000": below twice max-observed-frame-size (1000): two frames must fit`,
			`config: frame-read-timeout "0s": must be positive`,
			`config: idle-timeout "-1s": must be positive`,
			`config: max-connections "-1": negative; 0 means derived from the file-descriptor limit`,
			`config: max-connections-per-ip "-2": negative; 0 means no limit`,
		}},
		{"buffered bytes below two observed frames", func(c *Config) { c.MaxBufferedBytes = 6 << 20 },
			[]string{`config: max-buffered-bytes "6291456": below twice max-observed-frame-size (4194304): two frames must fit`}},
		{"listener collisions", func(c *Config) {
			c.Listen = "127.0.0.1:9092"
			c.Admin = "0.0.0.0:9092"
			c.BrokerListeners = map[int32]string{1: "127.0.0.1:9644", 2: "127.0.0.1:9092", 3: "127.0.0.1:0"}
		}, []string{
			`config: admin "0.0.0.0:9092": same port as listen (127.0.0.1:9092)`,
			`config: broker-listeners.2 "127.0.0.1:9092": same port as listen (127.0.0.1:9092)`,
		}},
		{"admin on another interface", func(c *Config) { c.Listen = "127.0.0.1:9092"; c.Admin = "127.0.0.2:9092" }, nil},
		{"journal settings at their limits", func(c *Config) {
			c.JournalOptions.Fsync = journal.FsyncAlways
			c.JournalOptions.SegmentBytes = MinJournalSegmentSize
			c.JournalOptions.SegmentAge, c.JournalOptions.RetainBytes, c.JournalOptions.RetainAge = 0, 0, 0
		}, nil},
		{"fsync interval of 1ms", func(c *Config) { c.JournalOptions.Fsync = journal.Fsync(time.Millisecond) }, nil},
		{"fsync out of range", func(c *Config) { c.JournalOptions.Fsync = journal.Fsync(time.Microsecond) },
			[]string{`config: journal-fsync "1µs": want always, never or an interval of at least 1ms`}},
		{"fsync unknown policy", func(c *Config) { c.JournalOptions.Fsync = -3 },
			[]string{`config: journal-fsync "-3ns": want always, never or an interval of at least 1ms`}},
		{"journal sizes", func(c *Config) { c.JournalOptions.SegmentBytes = 1000; c.JournalOptions.RetainBytes = -1 },
			[]string{
				`config: journal-segment-size "1000": below the minimum of 65536 bytes (64KiB)`,
				`config: journal-retain-size "-1": must not be negative (0 means no limit)`,
			}},
		{"retain size below segment size", func(c *Config) { c.JournalOptions.RetainBytes = c.JournalOptions.SegmentBytes - 1 },
			[]string{`config: journal-retain-size "67108863": smaller than journal-segment-size (67108864 bytes): not even one whole segment would be kept; 0 means no limit`}},
		{"journal ages", func(c *Config) { c.JournalOptions.SegmentAge = -time.Second; c.JournalOptions.RetainAge = -time.Hour },
			[]string{
				`config: journal-segment-age "-1s": must not be negative (0 means never by age)`,
				`config: journal-retain-age "-1h0m0s": must not be negative (0 means no limit)`,
			}},
		{"storm", func(c *Config) { c.StormRebalances = 1; c.StormWindow = 0 },
			[]string{
				`config: storm-rebalances "1": below the minimum of 2 (one rebalance is not a storm)`,
				`config: storm-window "0s": must be positive`,
			}},
		{"admin without port", func(c *Config) { c.Admin = "localhost" },
			[]string{`config: admin "localhost": missing port`}},
		{"log format", func(c *Config) { c.LogFormat = "text" },
			[]string{`config: log-format "text": want console or json`}},
		{"log level", func(c *Config) { c.LogLevel = "fatal" },
			[]string{`config: log-level "fatal": want debug, info, warn or error`}},
		{"several problems at once", func(c *Config) { c.Listen = "x"; c.Upstreams = nil; c.LogLevel = "" },
			[]string{
				`config: listen "x": missing port`,
				`config: upstream: required: at least one seed broker HOST:PORT`,
				`config: log-level: want debug, info, warn or error`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(&c)
			got := messages(c.Validate())
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Validate() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// messages splits a joined error into its messages, checking that each one
// is an *Error.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, messages(e)...)
		}
		return out
	}
	var ce *Error
	if !errors.As(err, &ce) {
		return []string{"not a *config.Error: " + err.Error()}
	}
	return []string{err.Error()}
}
