#!/usr/bin/env bash
# run.sh [SCENARIO...]: kproxy's end-to-end suite against a real Apache Kafka
# broker and real clients. Installs what is missing (install.sh, cached in
# e2e/.cache), builds kproxy, starts the broker, runs the scenarios, stops the
# broker. With no argument every scenario runs; `run.sh 1 8` runs scenarios 1
# and 8 (TestScenario1, TestScenario8 in e2e/*_test.go, build tag e2e).
#
# Each scenario keeps its client logs, kproxy's journal and the replayed
# timeline in e2e/.cache/runs/TestScenarioN/; the broker's log stays in
# e2e/.cache/broker/logs/. Exit status: that of go test.
#
# Environment: E2E_TIMEOUT (go test -timeout, default 15m), and those of
# broker.sh (ports, E2E_INITIAL_DELAY_MS).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

run='^TestScenario[0-9]+$'
if (($# > 0)); then
	for s in "$@"; do
		[[ "$s" =~ ^[0-9]+$ ]] || { echo "run.sh: scenario must be a number, got '$s'" >&2; exit 2; }
	done
	run="^TestScenario($(
		IFS='|'
		echo "$*"
	))\$"
fi

start=$SECONDS
"$here/install.sh"
[[ -x "$here/.cache/bin/kproxy" && -f "$root/cmd/kproxy/main.go" ]] ||
	{ echo "run.sh: kproxy was not built" >&2; exit 1; }
echo "run.sh: installed and built in $((SECONDS - start)) s" >&2

# Every process started from here on inherits E2E_RUN_ID; at exit, after the
# broker, whatever still carries it (a client left behind by a go test that
# timed out) is killed, and nothing else.
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

"$here/broker.sh" start

cd "$root"
status=0
go test -tags e2e -count=1 -v -timeout "${E2E_TIMEOUT:-15m}" -run "$run" ./e2e || status=$?
echo "run.sh: finished in $((SECONDS - start)) s (status $status)" >&2
if ((status != 0)); then
	echo "run.sh: logs in $here/.cache/runs/ and $here/.cache/broker/logs/" >&2
fi
exit "$status"
