package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startKfake starts an in-process kfake cluster on 127.0.0.1 and closes it
// when the test ends.
func startKfake(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
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
