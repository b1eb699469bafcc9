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
func TestNodeListenAddr(t *testing.T) {
	cfg := Config{Listen: "127.0.0.1:0", Upstreams: []string{"127.0.0.1:1"},
		BrokerListeners: map[int32]string{5: "127.0.0.1:7777"}}
	p, err := New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.bootstrap.Close()
	port := p.Addr().(*net.TCPAddr).Port
	if got, want := p.nodeListenAddr(2), "127.0.0.1:"+strconv.Itoa(port+3); got != want {
		t.Errorf("node 2 with the default base: %s; want %s", got, want)
	}
	if got := p.nodeListenAddr(5); got != "127.0.0.1:7777" {
		t.Errorf("node 5 from BrokerListeners: %s; want 127.0.0.1:7777", got)
	}
	cfg.BrokerPortBase = 20000
	q, err := New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer q.bootstrap.Close()
	if got := q.nodeListenAddr(3); got != "127.0.0.1:20003" {
		t.Errorf("node 3 with base 20000: %s; want 127.0.0.1:20003", got)
	}
}
