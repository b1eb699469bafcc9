#!/usr/bin/env bash
# broker.sh start|stop|kill|resume|status|install|version: a single-node Apache
# Kafka broker (KRaft, broker and controller in one JVM) on loopback for the
# e2e suite, of the release E2E_KAFKA_VERSION names (by default the one of
# e2e/broker/pom.xml, the current release; the suite also runs on 3.9.2).
#
# install  fetches that release's server jars from Maven Central with Maven
#          into e2e/.cache/kafka-VERSION/libs (a second call does nothing).
# start    installs, formats a fresh KRaft log dir, starts the broker and waits
#          until it answers. Does nothing when that release already runs; a
#          broker of another release is stopped first. The release that runs
#          is written to e2e/.cache/broker/version, where the suite reads it
#          (to pick the Java client of the same release).
# stop     stops it (SIGTERM, then SIGKILL after 30 s). The log stays in
#          e2e/.cache/broker/logs for a failed run to read.
# kill     kills it at once (SIGKILL): a broker crash, whatever it was
#          writing cut short. `resume` brings it back.
# resume   starts it again on the data it had when stopped (a broker outage),
#          with the release that formatted that data.
# status   exits 0 when the broker runs and answers.
# version  prints the release E2E_KAFKA_VERSION selects.
#
# Environment:
#   E2E_KAFKA_VERSION     Apache Kafka release (default: kafka.version in
#                         e2e/broker/pom.xml); 3.x and 4.x KRaft releases
#   E2E_BROKER_PORT       client listener port (default 61092)
#   E2E_CONTROLLER_PORT   controller listener port (default 61093)
#   E2E_INITIAL_DELAY_MS  group.initial.rebalance.delay.ms (default 3000,
#                         Kafka's own default)
#   E2E_BROKER_HEAP       JVM heap (default 768m)
#   E2E_SASL_SSL_PORT     SASL_SSL listener port (default 61094)
#   E2E_REAUTH_PORT       second SASL_SSL listener, whose sessions last
#                         E2E_REAUTH_MS (default 61095)
#   E2E_REAUTH_MS         connections.max.reauth.ms of that listener (default
#                         3000): clients must re-authenticate (KIP-368)
#
# Besides the PLAINTEXT listener the plaintext scenarios use, the broker has
# two SASL_SSL listeners, configured like production: PLAIN users in JAAS,
# SCRAM-SHA-256 users created at format time (--add-scram), a certificate
# signed by a CA made for this start. Inter-broker and controller traffic stay
# plaintext. Every start writes into $state/tls/: ca.pem (the CA clients
# trust), broker.p12, and passwords, one USER=PASSWORD a line, random per
# start:
#   alice   SCRAM-SHA-256     bob   PLAIN     kproxy  SCRAM-SHA-256 and PLAIN
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="$here/.cache"
state="$cache/broker"
default_version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/broker/pom.xml")"
kafka_version="${E2E_KAFKA_VERSION:-$default_version}"
if [[ "${1:-}" == resume && -f "$state/version" ]]; then
	# The data on disk was formatted by the release that ran last.
	kafka_version="$(cat "$state/version")"
fi
[[ "$kafka_version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || {
	echo "broker.sh: E2E_KAFKA_VERSION must be a release like 4.4.0, got '$kafka_version'" >&2
	exit 2
}
libs="$cache/kafka-$kafka_version/libs"
port="${E2E_BROKER_PORT:-61092}"
cport="${E2E_CONTROLLER_PORT:-61093}"
delay="${E2E_INITIAL_DELAY_MS:-3000}"
heap="${E2E_BROKER_HEAP:-768m}"
sport="${E2E_SASL_SSL_PORT:-61094}"
rport="${E2E_REAUTH_PORT:-61095}"
reauth_ms="${E2E_REAUTH_MS:-3000}"
tls="$state/tls"
# A fixed cluster id: every start formats a fresh log dir anyway.
cluster_id="kPrOxYe2eClusterId0001"

log() { echo "broker.sh: $*" >&2; }
die() { log "$*"; exit 1; }

install() {
	if [[ -f "$libs/.complete" ]]; then
		return
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
	command -v java >/dev/null || die "java not found: install a JDK 17+"
	log "fetching Apache Kafka $kafka_version jars from Maven Central"
	rm -rf "$libs"
	mkdir -p "$cache"
	local props=(-Dkafka.version="$kafka_version")
	# 3.x's Log4jController calls the log4j 1 API (see the pom).
	[[ "$kafka_version" == 3.* ]] && props+=(-Dkafka.log4j1=true)
	mvn -B -f "$here/broker/pom.xml" -Dmaven.repo.local="$cache/m2" "${props[@]}" \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$libs" \
		>"$cache/mvn-broker-$kafka_version.log" 2>&1 ||
		{ cat "$cache/mvn-broker-$kafka_version.log" >&2; die "mvn could not fetch org.apache.kafka:kafka_2.13:$kafka_version (is Maven Central reachable?)"; }
	[[ -f "$libs/kafka_2.13-$kafka_version.jar" ]] || die "kafka_2.13-$kafka_version.jar missing in $libs"
	touch "$libs/.complete"
}

pid_alive() {
	[[ -f "$state/pid" ]] && kill -0 "$(cat "$state/pid")" 2>/dev/null
}

answers() {
	# The port accepts connections and the broker said it started.
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
		grep -q "Kafka Server started" "$state/logs/server.log" 2>/dev/null
}

java_opts() {
	echo "-Xms256m -Xmx$heap -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true" \
		"-Dlog4j2.configurationFile=$here/broker/log4j2.properties -Dkafka.logs.dir=$state/logs"
}

# password USER: USER's password from $tls/passwords.
password() { sed -n "s/^$1=//p" "$tls/passwords"; }

# make_tls writes a fresh CA, the broker's certificate (localhost and
# 127.0.0.1) in a PKCS12 keystore, and random passwords.
make_tls() {
	command -v openssl >/dev/null || die "openssl not found"
	rm -rf "$tls"
	mkdir -p "$tls"
	(
		cd "$tls"
		umask 077
		for u in alice bob kproxy keystore; do
			echo "$u=$u-$(openssl rand -hex 12)"
		done >passwords
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 90 \
			-subj "/CN=kproxy e2e cluster CA" 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj "/CN=localhost" 2>/dev/null
		printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >broker.ext
		openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out broker.pem -days 90 \
			-extfile broker.ext 2>/dev/null
		openssl pkcs12 -export -in broker.pem -inkey broker.key -certfile ca.pem -out broker.p12 \
			-passout "pass:$(password keystore)"
		chmod 644 ca.pem
	) || die "making the broker's TLS material failed"
}

# sasl_listener NAME: the settings of one SASL_SSL listener.
sasl_listener() {
	local l="listener.name.$1"
	cat <<EOF
$l.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256
$l.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="$(password bob)" user_kproxy="$(password kproxy)";
$l.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
$l.ssl.keystore.type=PKCS12
$l.ssl.keystore.location=$tls/broker.p12
$l.ssl.keystore.password=$(password keystore)
EOF
}

write_config() {
	cat >"$state/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,SASL_SSL://127.0.0.1:$sport,REAUTH://127.0.0.1:$rport
advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_SSL://127.0.0.1:$sport,REAUTH://127.0.0.1:$rport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,REAUTH:SASL_SSL
$(sasl_listener sasl_ssl)
$(sasl_listener reauth)
listener.name.reauth.connections.max.reauth.ms=$reauth_ms
log.dirs=$state/data
num.partitions=1
num.network.threads=2
num.io.threads=2
background.threads=2
offsets.topic.replication.factor=1
offsets.topic.num.partitions=50
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
# Share groups need no switch: formatting at 4.4 finalizes share.version 2.
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=$delay
# Scenarios use short session timeouts so a killed member is noticed quickly.
group.min.session.timeout.ms=1000
group.consumer.min.session.timeout.ms=1000
group.consumer.session.timeout.ms=10000
group.consumer.min.heartbeat.interval.ms=500
group.consumer.heartbeat.interval.ms=1000
# Streams groups (KIP-1071, scenario 48): the same short timeouts, and one
# standby replica per task so that standby tasks appear in the story.
group.streams.min.session.timeout.ms=1000
group.streams.session.timeout.ms=10000
group.streams.min.heartbeat.interval.ms=500
group.streams.heartbeat.interval.ms=1000
group.streams.num.standby.replicas=1
auto.create.topics.enable=false
log.retention.check.interval.ms=3600000
EOF
}

start() {
	install
	if pid_alive && answers && [[ "$(cat "$state/version" 2>/dev/null)" == "$kafka_version" ]]; then
		log "Kafka $kafka_version already running (pid $(cat "$state/pid")) on 127.0.0.1:$port"
		return
	fi
	if pid_alive; then
		stop
	fi
	mkdir -p "$state"
	rm -rf "$state/data"
	if [[ -d "$state/logs" ]]; then
		rm -rf "$state/logs.prev"
		mv "$state/logs" "$state/logs.prev"
	fi
	mkdir -p "$state/logs" "$state/data"
	echo "$kafka_version" >"$state/version"
	make_tls
	write_config
	chmod 600 "$state/server.properties"
	local cp="$libs/*"
	# shellcheck disable=SC2046
	java $(java_opts) -cp "$cp" kafka.tools.StorageTool format \
		-t "$cluster_id" -c "$state/server.properties" \
		--add-scram "SCRAM-SHA-256=[name=alice,password=$(password alice)]" \
		--add-scram "SCRAM-SHA-256=[name=kproxy,password=$(password kproxy)]" \
		>"$state/logs/format.out" 2>&1 ||
		{ cat "$state/logs/format.out" >&2; die "formatting the KRaft log dir failed"; }
	launch
}

# launch starts the broker on the log dir as it is and waits until it
# answers.
launch() {
	local cp="$libs/*" attempt i
	for attempt in 1 2 3; do
		log "starting Kafka $kafka_version on 127.0.0.1:$port, SASL_SSL on $sport and $rport (reauth ${reauth_ms}ms) (group.initial.rebalance.delay.ms=$delay)"
		# shellcheck disable=SC2046
		setsid java $(java_opts) -cp "$cp" kafka.Kafka "$state/server.properties" \
			>"$state/logs/stdout.log" 2>&1 </dev/null &
		echo $! >"$state/pid"
		for ((i = 0; i < 240; i++)); do
			if answers; then
				log "up after $((i / 4)) s (pid $(cat "$state/pid")); log: $state/logs/server.log"
				return
			fi
			pid_alive || break
			sleep 0.25
		done
		if pid_alive; then
			tail -n 40 "$state/logs/server.log" >&2 || true
			stop
			die "broker did not answer within 60 s; log: $state/logs"
		fi
		# The default ports sit above the kernel's ephemeral range, but
		# ports given by the environment may be inside it, where another
		# process's outgoing connection can hold one for a moment.
		if ((attempt < 3)) && grep -q "Address already in use" "$state/logs/stdout.log"; then
			log "a listener port is taken (another connection's ephemeral port?); retrying in 2 s"
			sleep 2
			continue
		fi
		tail -n 40 "$state/logs/stdout.log" >&2
		die "broker exited during start; log: $state/logs"
	done
}

# resume starts the broker again after stop, on the data it had: the fault
# suite's broker outage. It refuses when start never ran.
resume() {
	install
	if pid_alive && answers; then
		log "already running (pid $(cat "$state/pid")) on 127.0.0.1:$port"
		return
	fi
	[[ -f "$state/server.properties" && -d "$state/data" ]] || die "resume: no stopped broker to resume (run start first)"
	launch
}

stop() {
	if ! pid_alive; then
		rm -f "$state/pid"
		return
	fi
	local pid i
	pid="$(cat "$state/pid")"
	log "stopping pid $pid"
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 120; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "pid $pid still alive after 30 s: SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$state/pid"
}

# kill is a broker crash: SIGKILL, with no chance to finish a response.
kill_broker() {
	if ! pid_alive; then
		rm -f "$state/pid"
		return
	fi
	local pid i
	pid="$(cat "$state/pid")"
	log "killing pid $pid (SIGKILL)"
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 40; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	rm -f "$state/pid"
}

status() {
	if pid_alive && answers; then
		echo "running Kafka $(cat "$state/version" 2>/dev/null) pid $(cat "$state/pid") on 127.0.0.1:$port"
		return 0
	fi
	echo "not running"
	return 1
}

case "${1:-}" in
install) install ;;
start) start ;;
resume) resume ;;
stop) stop ;;
kill) kill_broker ;;
status) status ;;
version) echo "$kafka_version" ;;
*) die "usage: broker.sh start|stop|kill|resume|status|install|version" ;;
esac
