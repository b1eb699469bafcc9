#!/usr/bin/env bash
# test.sh runs every check and every test of kproxy; it is the README's test
# command and what CI runs (.ci/run). It stops at the first failure:
#   1. gofmt: no tracked .go file may need formatting
#   2. go vet of every file, the tagged ones included
#   3. go test -race -tags integration,browser ./... (two packages at a
#      time, 30 minutes each rather than 10: timeline's take about 5 on an
#      idle 2-core host and can pass 10 under load): the fast lane that a bare `go test ./...` runs, plus the
#      real-time kfake scenarios (integration) and the tests that drive
#      Chromium (browser), which fail without it (docs/testing.md)
#   4. each fuzz target (every Fuzz function, listed by go test -list) for a
#      fixed time (FUZZTIME, default 30s: five targets, two and a half
#      minutes); the seed corpora are in each package's
#      testdata/fuzz/, where the fuzzer also writes any input that fails
#   5. e2e/run.sh, when it exists (real clients against a real broker)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

fuzztime="${FUZZTIME:-30s}"
step() { printf '\n==> %s\n' "$*"; }

step "gofmt"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files="$(git ls-files -- '*.go')"
else
	files="$(find . -name '*.go' -not -path './e2e/.cache/*' -not -path './.cache/*')"
fi
unformatted="$(printf '%s\n' "$files" | xargs -r gofmt -l)"
if [[ -n "$unformatted" ]]; then
	echo "these files need gofmt -w:" >&2
	echo "$unformatted" >&2
	exit 1
fi

step "go vet -tags integration,browser,e2e ./..."
go vet -tags integration,browser,e2e ./...

step "go test -race -p 2 -timeout 30m -tags integration,browser ./..."
go test -race -p 2 -timeout 30m -tags integration,browser ./...

step "fuzz targets, ${fuzztime} each"
# `go test -list` prints each package's matching names, then its "ok" line.
targets="$(go test -list '^Fuzz' ./... | awk '
	/^Fuzz/ { names[n++] = $1; next }
	/^ok / { for (i = 0; i < n; i++) print $2, names[i]; n = 0; next }
	{ n = 0 }')"
if [[ -z "$targets" ]]; then
	echo "no fuzz targets"
fi
while read -r pkg name; do
	[[ -z "$pkg" ]] && continue
	echo "--- $name ($pkg)"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
done <<<"$targets"

if [[ -f e2e/run.sh ]]; then
	step "e2e/run.sh"
	bash e2e/run.sh
else
	step "e2e/run.sh not present: skipped"
fi

step "all checks passed"
