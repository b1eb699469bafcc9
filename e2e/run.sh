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
# Environment: E2E_TIMEOUT (go test -timeout, default 11m), and those of
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

"$here/broker.sh" start
trap '"$here/broker.sh" stop' EXIT

cd "$root"
status=0
go test -tags e2e -count=1 -v -timeout "${E2E_TIMEOUT:-11m}" -run "$run" ./e2e || status=$?
echo "run.sh: finished in $((SECONDS - start)) s (status $status)" >&2
if ((status != 0)); then
	echo "run.sh: logs in $here/.cache/runs/ and $here/.cache/broker/logs/" >&2
fi
exit "$status"
