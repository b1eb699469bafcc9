//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// The clients the suite drives. Each takes the flags its program documents;
// bootstrap is always kproxy's address (see bootstrap in kproxy_test.go).

// javaClient runs the Java client (e2e/java), built with kafka-clients of the
// broker's release (kafkaVersion), with the command consume, produce or read.
// Small heap and C1 only: many short-lived JVMs share two cores. Options go
// through the environment to keep the logged command short.
func javaClient(t *testing.T, name, command string, args ...string) *proc {
	t.Helper()
	return javaClientEnv(t, name, nil, command, args...)
}

// javaClientEnv is javaClient with more environment (clientSecurity). A
// JAVA_TOOL_OPTIONS entry in more adds its options to the suite's JVM
// options (javaHostsFile) rather than replacing them.
func javaClientEnv(t *testing.T, name string, more []string, command string, args ...string) *proc {
	t.Helper()
	opts := []string{"-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		// Not the full config dump at every start.
		"-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common.config.AbstractConfig=warn",
		"-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common.metrics=warn"}
	// The client of the broker's release (install.sh builds one per release).
	java := filepath.Join(cacheDir, "java-"+kafkaVersion)
	env := []string{"CLASSPATH=" + filepath.Join(java, "classes") + ":" + filepath.Join(java, "libs", "*")}
	for _, kv := range more {
		if o, ok := strings.CutPrefix(kv, "JAVA_TOOL_OPTIONS="); ok {
			opts = append(opts, o)
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "JAVA_TOOL_OPTIONS="+strings.Join(opts, " "))
	return startProc(t, name, env, append([]string{"java", "dev.kproxy.e2e.Client", command}, args...)...)
}

// kafkaPython runs e2e/python/kafka_python_consumer.py.
func kafkaPython(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return kafkaPythonEnv(t, name, nil, args...)
}

// kafkaPythonEnv is kafkaPython with more environment (clientSecurity).
func kafkaPythonEnv(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	argv := []string{filepath.Join(cacheDir, "venv", "bin", "python"), "-u",
		filepath.Join(e2eDir, "python", "kafka_python_consumer.py")}
	return startProc(t, name, env, append(argv, args...)...)
}

// confluentKafka runs e2e/python/confluent_consumer.py (librdkafka).
func confluentKafka(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return confluentKafkaEnv(t, name, nil, args...)
}

// confluentKafkaEnv is confluentKafka with more environment (clientSecurity).
func confluentKafkaEnv(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	argv := []string{filepath.Join(cacheDir, "venv", "bin", "python"), "-u",
		filepath.Join(e2eDir, "python", "confluent_consumer.py")}
	return startProc(t, name, env, append(argv, args...)...)
}

// kafkaJS runs e2e/node/consumer.js.
func kafkaJS(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	env := []string{"NODE_PATH=" + filepath.Join(cacheDir, "node", "node_modules")}
	argv := []string{"node", filepath.Join(e2eDir, "node", "consumer.js")}
	return startProc(t, name, env, append(argv, args...)...)
}

// franzGo runs e2e/franzclient with the command consume or produce.
func franzGo(t *testing.T, name, command string, args ...string) *proc {
	t.Helper()
	argv := []string{filepath.Join(binDir, "franzclient"), command}
	return startProc(t, name, nil, append(argv, args...)...)
}

// feed writes n records spread evenly over topic's partitions, through
// bootstrap, and waits for them to be acknowledged.
func feed(t *testing.T, bootstrap, topic string, n int) {
	t.Helper()
	p := franzGo(t, "feed-"+topic, "produce", "-bootstrap", bootstrap, "-topic", topic, "-count", itoa(n))
	p.waitDone(60e9)
}
