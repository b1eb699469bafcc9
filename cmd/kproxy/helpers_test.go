package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/internal/testkafka"
)

// startKfake starts an in-process kfake cluster on 127.0.0.1 and closes it
// when the test ends.
func startKfake(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	return testkafka.Start(t, opts...)
}

// startServer runs a server with cfg until the test ends or the returned
// stop is called; stop returns run's error.
func startServer(t *testing.T, cfg config.Config, hooks serveHooks) (*server, func() error) {
	t.Helper()
	return startServerLog(t, cfg, hooks, zap.NewNop())
}

// startServerLog is startServer logging to log.
func startServerLog(t *testing.T, cfg config.Config, hooks serveHooks, log *zap.Logger) (*server, func() error) {
	t.Helper()
	s, err := newServerWith(cfg, hooks, log)
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	stopped := false
	var runErr error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			runErr = <-done
		}
		return runErr
	}
	t.Cleanup(func() { stop() })
	return s, stop
}

// runKproxy runs the kproxy command line with args and returns what it
// printed on stdout and its error. KPROXY_* variables are cleared first.
func runKproxy(t *testing.T, args ...string) (string, error) {
	t.Helper()
	clearKproxyEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// clearKproxyEnv unsets every KPROXY_* variable for the test's duration.
func clearKproxyEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "KPROXY_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}
