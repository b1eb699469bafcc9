#!/usr/bin/env bash
# install.sh [KAFKA_VERSION...]: installs everything the e2e suite runs, cached
# under e2e/.cache, and does nothing for a part whose inputs have not changed:
#   - the Apache Kafka broker jars of each release named (broker.sh install;
#     Maven Central); with no argument, the release of e2e/broker/pom.xml
#   - the Java client of each of those releases: kafka-clients of the same
#     version via Maven, compiled with javac into .cache/java-VERSION
#   - kafka-python and confluent-kafka in a venv (PyPI)
#   - kafkajs (npm registry, from e2e/node/package-lock.json)
#   - the franz-go client and kproxy itself (go build; Go module proxy)
#   - franz-go's own integration tests, the test binary of its package kgo
#     at the version in go.mod, built from the module cache (go test -c)
# A registry that cannot be reached fails the install loudly: no scenario is
# ever skipped for want of a client.
#
# Needs on PATH: java and javac (17+), mvn, python3 (with venv), node and npm, go.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cache="$here/.cache"
mkdir -p "$cache/bin"

log() { echo "install.sh: $*" >&2; }
die() { log "$*"; exit 1; }

for tool in java javac mvn python3 node npm go; do
	command -v "$tool" >/dev/null || die "$tool not found on PATH"
done

# stamp NAME FILES...: true when the files' hash matches the one recorded for
# NAME (the part is already installed).
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
fresh() {
	local name="$1"
	shift
	[[ -f "$cache/.stamp-$name" && "$(cat "$cache/.stamp-$name")" == "$(hash_of "$@")" ]]
}
stamp() {
	local name="$1"
	shift
	hash_of "$@" >"$cache/.stamp-$name"
}

versions=("$@")
if ((${#versions[@]} == 0)); then
	versions=("$("$here/broker.sh" version)")
fi

java_inputs=("$here/java/pom.xml" "$here"/java/src/dev/kproxy/e2e/*.java)
for v in "${versions[@]}"; do
	# The broker.
	E2E_KAFKA_VERSION="$v" "$here/broker.sh" install

	# The Java client, with kafka-clients of the broker's release.
	if ! fresh "java-$v" "${java_inputs[@]}"; then
		log "Java client $v: fetching kafka-clients $v with Maven, compiling"
		rm -rf "$cache/java-$v"
		mvn -B -f "$here/java/pom.xml" -Dmaven.repo.local="$cache/m2" -Dkafka.version="$v" \
			dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$cache/java-$v/libs" \
			>"$cache/mvn-java-$v.log" 2>&1 ||
			{ cat "$cache/mvn-java-$v.log" >&2; die "mvn could not fetch the Java client's dependencies for Kafka $v (is Maven Central reachable?)"; }
		[[ -f "$cache/java-$v/libs/kafka-clients-$v.jar" ]] || die "kafka-clients-$v.jar missing in $cache/java-$v/libs"
		mkdir -p "$cache/java-$v/classes"
		javac -nowarn -d "$cache/java-$v/classes" -cp "$cache/java-$v/libs/*" "$here"/java/src/dev/kproxy/e2e/*.java
		stamp "java-$v" "${java_inputs[@]}"
	fi
done

# The Python clients.
if ! fresh venv "$here/python/requirements.txt"; then
	log "Python clients: pip install into $cache/venv"
	rm -rf "$cache/venv"
	python3 -m venv "$cache/venv"
	"$cache/venv/bin/pip" install -q --disable-pip-version-check -r "$here/python/requirements.txt" ||
		die "pip could not install $here/python/requirements.txt (is PyPI reachable?)"
	stamp venv "$here/python/requirements.txt"
fi

# kafkajs.
if ! fresh node "$here/node/package.json" "$here/node/package-lock.json"; then
	log "Node client: npm ci into $cache/node"
	rm -rf "$cache/node"
	mkdir -p "$cache/node"
	cp "$here/node/package.json" "$here/node/package-lock.json" "$cache/node/"
	(cd "$cache/node" && npm ci --no-audit --no-fund --loglevel=error >&2) ||
		die "npm ci failed (is the npm registry reachable?)"
	stamp node "$here/node/package.json" "$here/node/package-lock.json"
fi

# Go: always rebuilt (go's own cache makes an unchanged build cheap).
(cd "$root" && go build -o "$cache/bin/franzclient" ./e2e/franzclient) ||
	die "go build ./e2e/franzclient failed"
# Scenario 31 runs franz-go's integration tests (TestGroupETL, TestTxnEtl,
# TestShareGroupETL): go test builds a dependency's test package from the
# module cache like any other, so the binary is the franz-go of go.mod.
(cd "$root" && go test -c -o "$cache/bin/kgo.test" github.com/twmb/franz-go/pkg/kgo) ||
	die "go test -c github.com/twmb/franz-go/pkg/kgo failed (is the Go module proxy reachable?)"
if [[ -f "$root/cmd/kproxy/main.go" ]]; then
	(cd "$root" && go build -o "$cache/bin/kproxy" ./cmd/kproxy) || die "go build ./cmd/kproxy failed"
else
	log "cmd/kproxy does not exist yet: kproxy not built"
fi
log "done"
