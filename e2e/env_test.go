//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
	// brokerDir is broker.sh's state: the running release, TLS material,
	// logs.
	brokerDir = filepath.Join(cacheDir, "broker")
	// kafkaVersion is the Apache Kafka release of the running broker
	// (broker.sh start writes it); the Java client is of the same
	// release.
	kafkaVersion = brokerVersion()
	// runsDir keeps each test's run directory: runs/ on the release of
	// e2e/broker/pom.xml, runs-VERSION/ on another (run.sh runs the core
	// scenarios on 3.9.2 after the whole suite), so that neither run
	// overwrites the other's logs.
	runsDir = runsDirFor(kafkaVersion)
)

// defaultKafkaVersion is kafka.version of e2e/broker/pom.xml, the release
// broker.sh starts when E2E_KAFKA_VERSION is not set.
func defaultKafkaVersion() string {
	pom, err := os.ReadFile(filepath.Join(e2eDir, "broker", "pom.xml"))
	if err != nil {
		panic(err)
	}
	m := regexp.MustCompile(`<kafka.version>([^<]+)</kafka.version>`).FindSubmatch(pom)
	if m == nil {
		panic("e2e/broker/pom.xml has no kafka.version")
	}
	return string(m[1])
}

// brokerVersion is the release broker.sh started last, or the default one
// when it never ran (TestMain then fails on the missing broker).
func brokerVersion() string {
	b, err := os.ReadFile(filepath.Join(brokerDir, "version"))
	if err != nil {
		return defaultKafkaVersion()
	}
	return strings.TrimSpace(string(b))
}

func runsDirFor(version string) string {
	if version == defaultKafkaVersion() {
		return filepath.Join(cacheDir, "runs")
	}
	return filepath.Join(cacheDir, "runs-"+version)
}

// kafkaAtLeast reports whether the broker's release is major.minor or newer.
func kafkaAtLeast(major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(kafkaVersion, "%d.%d", &ma, &mi); err != nil {
		panic(fmt.Sprintf("kafka version %q: %v", kafkaVersion, err))
	}
	return ma > major || ma == major && mi >= minor
}

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
	fmt.Fprintf(os.Stderr, "e2e: Apache Kafka %s at %s; Java client kafka-clients %s; runs in %s\n", kafkaVersion, brokerAddr, kafkaVersion, runsDir)
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
