//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Settings of the suite, from the environment run.sh passes on.
var (
	// brokerAddr is the e2e broker (broker.sh): only the harness's admin
	// client and kproxy's --upstream use it, never a scenario's client.
	brokerAddr = envOr("E2E_BROKER", "127.0.0.1:"+envOr("E2E_BROKER_PORT", "61092"))
	// proxyListen is kproxy's bootstrap listener; node N of the broker gets
	// port proxyPortBase+N.
	proxyListen   = envOr("E2E_PROXY_LISTEN", "127.0.0.1:61192")
	proxyPortBase = envOr("E2E_PROXY_PORT_BASE", "61200")
	// proxyAdmin is kproxy's admin server in the fault scenarios (11,
	// 12), which read its /metrics and /healthz.
	proxyAdmin = envOr("E2E_PROXY_ADMIN", "127.0.0.1:61191")
	// mode is E2E_MODE, for working on one part alone; run.sh never sets
	// it. "" (the default) runs kproxy with a journal and checks the
	// timeline; "proxy" runs kproxy without a journal and checks only the
	// clients; "direct" points the clients straight at the broker.
	mode = os.Getenv("E2E_MODE")
)

// Paths. go test runs a package's tests in its directory, e2e/.
var (
	e2eDir   = mustGetwd()
	cacheDir = filepath.Join(e2eDir, ".cache")
	binDir   = filepath.Join(cacheDir, "bin")
	runsDir  = filepath.Join(cacheDir, "runs")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func mustGetwd() string {
	d, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return d
}

// TestMain fails the whole run at once when the broker does not answer: a
// missing broker is a broken setup, never a reason to skip.
func TestMain(m *testing.M) {
	if mode != "" && mode != "proxy" && mode != "direct" {
		fmt.Fprintf(os.Stderr, "e2e: E2E_MODE=%q: want empty, proxy or direct\n", mode)
		os.Exit(2)
	}
	if err := pingBroker(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: broker %s does not answer (start it with e2e/broker.sh start, or run e2e/run.sh): %v\n", brokerAddr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func pingBroker() error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokerAddr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	return err
}
