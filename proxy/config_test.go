package proxy

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestConfigDefaults(t *testing.T) {
	got := Config{}.withDefaults()
	want := Config{MaxFrameSize: 100 << 20, DialTimeout: 10 * time.Second, ShutdownTimeout: 10 * time.Second,
		ObserverQueue: 4096, ObserverQueueBytes: 64 << 20}
	if got.MaxFrameSize != want.MaxFrameSize || got.DialTimeout != want.DialTimeout ||
		got.ShutdownTimeout != want.ShutdownTimeout || got.ObserverQueue != want.ObserverQueue ||
		got.ObserverQueueBytes != want.ObserverQueueBytes || got.DisableBrokerDiscovery {
		t.Errorf("defaults %+v; want %+v", got, want)
	}
	set := Config{MaxFrameSize: 1, DialTimeout: 2, ShutdownTimeout: 3, ObserverQueue: 4, ObserverQueueBytes: 5}
	if got := set.withDefaults(); got.MaxFrameSize != 1 || got.DialTimeout != 2 || got.ShutdownTimeout != 3 ||
		got.ObserverQueue != 4 || got.ObserverQueueBytes != 5 {
		t.Errorf("withDefaults changed set fields: %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Listen: "127.0.0.1:9092", Upstreams: []string{"broker:9092"}}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // substring of the error; "" for valid
	}{
		{"valid", func(*Config) {}, ""},
		{"listen without port", func(c *Config) { c.Listen = "localhost" }, "listen"},
		{"no upstreams", func(c *Config) { c.Upstreams = nil }, "upstreams"},
		{"upstream bad port", func(c *Config) { c.Upstreams = []string{"broker:x"} }, "upstream"},
		{"broker listener bad", func(c *Config) { c.BrokerListeners = map[int32]string{1: "nope"} }, "node 1"},
		{"port base out of range", func(c *Config) { c.BrokerPortBase = 70000 }, "port base"},
		{"negative frame size", func(c *Config) { c.MaxFrameSize = -1 }, "max frame size"},
		{"negative timeout", func(c *Config) { c.DialTimeout = -1 }, "timeouts"},
		{"negative queue", func(c *Config) { c.ObserverQueue = -1 }, "observer queue"},
		{"negative queue bytes", func(c *Config) { c.ObserverQueueBytes = -1 }, "observer queue bytes"},
		{"SNI without TLS", func(c *Config) { c.SNIHostPattern = "broker-$(nodeId).kproxy.test" }, "needs TLS"},
		{"SNI with TLS", func(c *Config) {
			c.SNIHostPattern, c.TLS = "broker-$(nodeId).kproxy.test", &ListenerTLS{CertFile: "c", KeyFile: "k"}
		}, ""},
		{"SNI with broker listeners", func(c *Config) {
			c.SNIHostPattern, c.TLS = "broker-$(nodeId).kproxy.test", &ListenerTLS{CertFile: "c", KeyFile: "k"}
			c.BrokerListeners = map[int32]string{1: "127.0.0.1:0"}
		}, "broker listeners cannot be set too"},
		{"SNI with advertise", func(c *Config) {
			c.SNIHostPattern, c.TLS = "broker-$(nodeId).kproxy.test", &ListenerTLS{CertFile: "c", KeyFile: "k"}
			c.Advertise = "kproxy.example.com"
		}, `advertise ("kproxy.example.com") cannot be set too`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("validate: %v; want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("validate: %v; want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestAdvertiseHost(t *testing.T) {
	for _, tc := range []struct {
		listen, advertise, want string
		guessed                 bool // a warning is due
	}{
		{":9092", "", "127.0.0.1", true},
		{"0.0.0.0:9092", "", "127.0.0.1", true},
		{"[::]:9092", "", "127.0.0.1", true},
		{"127.0.0.1:9092", "", "127.0.0.1", false},
		{"10.1.2.3:9092", "", "10.1.2.3", false},
		{"0.0.0.0:9092", "kproxy.example", "kproxy.example", false},
	} {
		c := Config{Listen: tc.listen, Advertise: tc.advertise}
		if got := c.advertiseHost(); got != tc.want {
			t.Errorf("listen %q advertise %q: advertised %q; want %q", tc.listen, tc.advertise, got, tc.want)
		}
		if got := c.advertiseGuessed(); got != tc.guessed {
			t.Errorf("listen %q advertise %q: guessed %v; want %v", tc.listen, tc.advertise, got, tc.guessed)
		}
	}
}

// TestNodeListenAddr: node N listens at the port base + N on Listen's host
// unless BrokerListeners names it; the base defaults to the bound port + 1.
// A node whose port would not be a TCP port has no listen address, unless
// BrokerListeners names it.
func TestNodeListenAddr(t *testing.T) {
	cfg := Config{Listen: "127.0.0.1:0", Upstreams: []string{"127.0.0.1:1"},
		BrokerListeners: map[int32]string{5: "127.0.0.1:7777", 70000: "127.0.0.1:7778"}}
	p, err := New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.bootstrap.Close()
	port := p.Addr().(*net.TCPAddr).Port
	cfg.BrokerPortBase = 65531
	q, err := New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer q.bootstrap.Close()
	for _, tc := range []struct {
		name   string
		p      *Proxy
		node   int32
		want   string
		wantOK bool
	}{
		{"default base", p, 2, "127.0.0.1:" + strconv.Itoa(port+3), true},
		{"BrokerListeners", p, 5, "127.0.0.1:7777", true},
		{"base 65531, port 65535", q, 4, "127.0.0.1:65535", true},
		{"base 65531, port 65537", q, 6, "", false},
		{"base 65531, BrokerListeners", q, 5, "127.0.0.1:7777", true},
		{"base 65531, BrokerListeners for a large id", q, 70000, "127.0.0.1:7778", true},
		{"negative id", q, -3, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.p.nodeListenAddr(tc.node)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("node %d: %q, %v; want %q, %v", tc.node, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
