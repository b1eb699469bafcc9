package main

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"
)

// portOf is the port of a "host:port".
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestServeRefusesListenerCollisions: a broker-port-base that puts broker
// node 0's listener on the bootstrap port, the admin port, a port in use or
// the broker's own port stops serve before it runs, with a message naming
// the keys; the ports it had opened are free again.
func TestServeRefusesListenerCollisions(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1))
	broker := c.ListenAddrs()[0]
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name string
		// base is the broker port base given the config's listen and
		// admin addresses: node 0's listener port.
		base func(listen, admin string) int
		want []string
	}{
		{"bootstrap_port", func(listen, _ string) int { return portOf(t, listen) },
			[]string{"broker-port-base", "bootstrap listener (listen)"}},
		{"admin_port", func(_, admin string) int { return portOf(t, admin) },
			[]string{"broker-port-base", "the port of admin"}},
		{"port_in_use", func(string, string) int { return portOf(t, busy.Addr().String()) },
			[]string{"broker-port-base", "in use"}},
		{"broker_own_port", func(string, string) int { return portOf(t, broker) },
			[]string{"broker-port-base", "the broker's own address"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, broker)
			cfg.Admin = freeAddr(t)
			cfg.BrokerListeners = nil
			cfg.BrokerPortBase = tt.base(cfg.Listen, cfg.Admin)
			_, err := newServer(cfg, zap.NewNop())
			if err == nil {
				t.Fatal("newServer succeeded; want a listener collision")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q; want it to mention %q", err, w)
				}
			}
			for _, addr := range []string{cfg.Listen, cfg.Admin} {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatalf("%s still in use after the refusal: %v", addr, err)
				}
				ln.Close()
			}
		})
	}
}

// TestServeStartsWithBrokersDown: no broker answering at startup is not a
// reason to refuse: serve starts, and /readyz says it is not ready while
// /healthz says it is alive.
func TestServeStartsWithBrokersDown(t *testing.T) {
	cfg := testConfig(t, freeAddr(t))
	cfg.DialTimeout = time.Second
	s, err := newServer(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	defer func() { cancel(); <-done }()
	base := "http://" + s.admin.Addr().String()
	waitStatus(t, base+"/readyz", http.StatusServiceUnavailable)
	waitStatus(t, base+"/healthz", http.StatusOK)
}

// TestReadyz: /readyz is ok while a broker is reachable and every listener
// is up, 503 once the broker is gone; /healthz stays ok throughout.
func TestReadyz(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1))
	s, err := newServer(testConfig(t, c.ListenAddrs()...), zap.NewNop())
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	defer func() { cancel(); <-done }()
	base := "http://" + s.admin.Addr().String()
	waitStatus(t, base+"/readyz", http.StatusOK)
	c.Close()
	waitStatus(t, base+"/readyz", http.StatusServiceUnavailable)
	waitStatus(t, base+"/healthz", http.StatusOK)
}

// waitStatus polls url until it answers status.
func waitStatus(t *testing.T, url string, status int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == status {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: never %d (last: %v %v)", url, status, resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
