#!/usr/bin/env bash
# run.sh [SCENARIO...]: kproxy's end-to-end suite against a real Apache Kafka
# broker and real clients. Installs what is missing (install.sh, cached in
# e2e/.cache), builds kproxy, then for each Kafka release in turn starts the
# broker, runs the scenarios and stops the broker:
#   - the release of e2e/broker/pom.xml (the current one, 4.4.0): every
#     scenario;
#   - 3.9.2, the last 3.x, which many clusters still run: the core scenarios,
#     1-8 but 4, the SASL scenarios 21, 22 and 24, and more (see older_scenarios).
# The Java client is always of the broker's release. With no argument every
# scenario a release runs is run; `run.sh 1 8` runs scenarios 1 and 8
# (TestScenario1, TestScenario8 in e2e/*_test.go, build tag e2e) on each
# release that runs them. E2E_KAFKA_VERSION=V runs on release V only (a 3.x
# release runs the core scenarios; asking it for another fails).
#
# Each scenario keeps its client logs, kproxy's journal and the replayed
# timeline in e2e/.cache/runs/TestScenarioN/ (runs-3.9.2/ on 3.9.2); the
# broker's log stays in e2e/.cache/broker/logs/ (the release before's in
# logs.prev/). Exit status: 0 when every release passed, else that of the
# last go test that failed.
#
# On a release, the fault scenarios (9-13: the broker stopped and killed,
# attacks, floods) run first and alone; then the scenarios that spend their
# time waiting (side_scenarios: minutes of healthy groups, workloads run
# twice) run in a second lane, a go test of their own with kproxy on other
# ports (each E2E_PROXY_* port + 300) against the same broker, beside the
# others. The second lane's output follows the first's.
#
# Environment: E2E_KAFKA_VERSION, E2E_TIMEOUT (go test -timeout per lane,
# default 30m), and those of broker.sh (ports, E2E_INITIAL_DELAY_MS).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

# The older release, and the scenarios it runs: the core stories of each
# client family (1-3, 5, 6), the coordinator lookup (7), the byte-exact round
# trip (8), and the SASL_SSL listeners broker.sh configures (SCRAM users made
# by kafka-storage format --add-scram, PLAIN, KIP-368 re-authentication: 21,
# 22, 24), the exactly-once workloads on 3.x's transactions (26, 27), the
# ApiVersions audit (50), and classic Kafka Streams' KIP-441 story (53). Scenario 4 (and 23) is KIP-848, which 3.9 has only
# as a preview, off by default; share groups (28, 51) and franz-go's suite (31,
# whose KIP-848 and share tests need 4.x) need a 4.x broker; the fault, SNI
# and diagnosis scenarios (9-13, 25, 41-45) exercise kproxy more than the
# broker, and run on the current release.
older_version=3.9.2
older_scenarios=(1 2 3 5 6 7 8 21 22 24 26 27 50 53)
fault_scenarios=(9 10 11 12 13)
side_scenarios=(29 46 51 55)

for s in "$@"; do
	[[ "$s" =~ ^[0-9]+$ ]] || { echo "run.sh: scenario must be a number, got '$s'" >&2; exit 2; }
done

current_version="$("$here/broker.sh" version)"
if [[ -n "${E2E_KAFKA_VERSION:-}" ]]; then
	releases=("$E2E_KAFKA_VERSION")
else
	releases=("$current_version" "$older_version")
fi

# scenarios_on VERSION: the scenarios to run on VERSION, one a line; the
# empty pattern stands for all of them.
scenarios_on() {
	local v="$1" s c keep
	if [[ "$v" != 3.* ]]; then
		if (($# > 1)); then printf '%s\n' "${@:2}"; else echo ""; fi
		return
	fi
	if (($# == 1)); then
		printf '%s\n' "${older_scenarios[@]}"
		return
	fi
	for s in "${@:2}"; do
		keep=""
		for c in "${older_scenarios[@]}"; do
			[[ "$s" == "$c" ]] && keep=1
		done
		if [[ -n "$keep" ]]; then
			echo "$s"
		elif [[ -n "${E2E_KAFKA_VERSION:-}" ]]; then
			echo "run.sh: scenario $s does not run on Kafka $v (3.x runs ${older_scenarios[*]})" >&2
			return 2
		fi
	done
}

# all_scenarios: every scenario number of e2e/*_test.go, one a line.
all_scenarios() {
	grep -ho '^func TestScenario[0-9]*' "$here"/*_test.go | sed 's/func TestScenario//' | sort -n
}

# pick LIST N...: the numbers of LIST (one a line) that are among N...
pick() {
	grep -xF -f <(printf '%s\n' "${@:2}") <<<"$1" || true
}

# port HOST:PORT: the port.
port() { echo "${1##*:}"; }

# lane VERSION LIST: go test of the scenarios of LIST (one a line; none:
# nothing to do) against the running broker of VERSION.
lane() {
	local run
	[[ -z "$2" ]] && return 0
	run="^TestScenario($(tr '\n' '|' <<<"$2" | sed 's/|$//'))\$"
	echo "run.sh: Kafka $1: go test -run '$run'" >&2
	go test -tags e2e -count=1 -v -timeout "${E2E_TIMEOUT:-30m}" -run "$run" ./e2e
}

# What each release runs, checked before anything is installed.
declare -A lists
for v in "${releases[@]}"; do
	lists[$v]="$(scenarios_on "$v" "$@")" || exit 2
done

start=$SECONDS
"$here/install.sh" "${releases[@]}"
[[ -x "$here/.cache/bin/kproxy" && -f "$root/cmd/kproxy/main.go" ]] ||
	{ echo "run.sh: kproxy was not built" >&2; exit 1; }
echo "run.sh: installed and built in $((SECONDS - start)) s" >&2

# Every process started from here on inherits E2E_RUN_ID; after each
# release's broker is stopped, whatever still carries it (a client left
# behind by a go test that timed out) is killed, and nothing else.
export E2E_RUN_ID="e2e-$$-$RANDOM$RANDOM"
sweep() {
	local env pid
	for env in /proc/[0-9]*/environ; do
		pid="${env#/proc/}"
		pid="${pid%/environ}"
		[[ "$pid" == "$$" ]] && continue
		if tr '\0' '\n' 2>/dev/null <"$env" | grep -qx "E2E_RUN_ID=$E2E_RUN_ID"; then
			echo "run.sh: killing leftover pid $pid: $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-120)" >&2
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}
cleanup() {
	"$here/broker.sh" stop
	sweep
}
trap cleanup EXIT

cd "$root"
status=0
summary=()
for v in "${releases[@]}"; do
	list="${lists[$v]}"
	if [[ -z "$list" && $# -gt 0 ]]; then
		echo "run.sh: Kafka $v: none of scenarios $* runs on it (3.x runs ${older_scenarios[*]})" >&2
		continue
	fi
	if [[ -z "$list" ]]; then
		list="$(all_scenarios)"
	fi
	faults="$(pick "$list" "${fault_scenarios[@]}")"
	side="$(pick "$list" "${side_scenarios[@]}")"
	rest="$(grep -vxF -f <(printf '%s\n' "${fault_scenarios[@]}" "${side_scenarios[@]}") <<<"$list" || true)"
	t0=$SECONDS
	E2E_KAFKA_VERSION="$v" "$here/broker.sh" start
	st=0
	lane "$v" "$faults" || st=$?
	if [[ -n "$side" ]]; then
		E2E_PROXY_LISTEN="127.0.0.1:$(($(port "${E2E_PROXY_LISTEN:-127.0.0.1:61192}") + 300))" \
			E2E_PROXY_PORT_BASE="$((${E2E_PROXY_PORT_BASE:-61200} + 300))" \
			E2E_PROXY_ADMIN="127.0.0.1:$(($(port "${E2E_PROXY_ADMIN:-127.0.0.1:61191}") + 300))" \
			E2E_SASL_ADMIN="127.0.0.1:$(($(port "${E2E_SASL_ADMIN:-127.0.0.1:61190}") + 300))" \
			lane "$v" "$side" >"$here/.cache/side-lane.log" 2>&1 &
		side_pid=$!
	fi
	lane "$v" "$rest" || st=$?
	if [[ -n "$side" ]]; then
		side_st=0
		wait "$side_pid" || side_st=$?
		echo "run.sh: Kafka $v: the second lane's output:" >&2
		cat "$here/.cache/side-lane.log"
		((side_st == 0)) || st=$side_st
	fi
	cleanup
	summary+=("Kafka $v: status $st in $((SECONDS - t0)) s")
	if ((st != 0)); then
		status=$st
		echo "run.sh: Kafka $v failed; logs in $here/.cache/runs*/ and $here/.cache/broker/logs/" >&2
	fi
done
for line in "${summary[@]}"; do
	echo "run.sh: $line" >&2
done
echo "run.sh: finished in $((SECONDS - start)) s (status $status)" >&2
exit "$status"
