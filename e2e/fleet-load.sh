#!/usr/bin/env bash
# fleet-load.sh: issue 14's load test, the figures of docs/fleet.md
# ("Measured"). kproxy-journalgen publish simulates 20 kproxy instances
# publishing the realistic traffic of 2,000 groups to the events topic on
# the e2e broker for 60 s, paced at real time, while a kproxy with
# --fleet-topic follows the topic; then kproxy replay --from-topic reads it
# all again, timed (TestFleetLoad in e2e/fleetload_test.go). It takes a few
# minutes, so run.sh never runs it.
#
# Uses the broker if it is already running (broker.sh start), else starts
# it and stops it at the end. Environment: E2E_FLEET_INSTANCES (20),
# E2E_FLEET_GROUPS (2000), E2E_FLEET_FOR (60s), E2E_FLEET_TOPIC
# (kproxy_events_load), and broker.sh's and the suite's ports.
# The figures are printed and kept in
# e2e/.cache/runs/TestFleetLoad/fleet-load.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

"$here/install.sh"
if ! "$here/broker.sh" status >/dev/null; then
	"$here/broker.sh" start
	trap '"$here/broker.sh" stop' EXIT
fi
cd "$root"
go test -tags e2e -count=1 -v -timeout 30m -run '^TestFleetLoad$' ./e2e
