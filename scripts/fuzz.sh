#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 30s), one after another.
# go test runs each target's seed corpus (and testdata/fuzz) as part of the ordinary tests; this
# searches further. A failing input is written under the package's testdata/fuzz/FuzzX/ and
# becomes a regression test once committed.
#
# Go before 1.27 (go.dev/issue/75804) can end a run with a bare "context deadline exceeded" when
# a starved worker misses the -fuzztime deadline; no input failed and none is written. Such a run
# is replayed over its corpus without fuzzing and counts as passed only if that replay passes and
# no failing input was written. Each target runs one worker, so targets do not starve each other
# on a small machine.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-30s}"
GO="${GO:-go}"
failed=0
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
while IFS=: read -r file name; do
	pkg="./$(dirname "$file")"
	echo "== $pkg $name ($FUZZTIME)"
	if "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel 1 "$pkg" 2>&1 | tee "$out"; then
		continue
	fi
	if ! grep -q 'Failing input written to' "$out" &&
		grep -qx '    context deadline exceeded' "$out" &&
		[ "$(grep -c -- '^--- FAIL' "$out")" = 1 ]; then
		echo "== $pkg $name: the fuzz run ended at its deadline with no failing input; replaying its corpus"
		if "$GO" test -count=1 -run "^${name}\$" "$pkg"; then
			continue
		fi
	fi
	failed=1
done < <(grep -rHoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' internal test cmd 2>/dev/null \
	| sed -E 's/:func /:/' | sort -u)
exit "$failed"
