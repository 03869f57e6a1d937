#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 30s), one after another.
# go test runs each target's seed corpus (and testdata/fuzz) as part of the ordinary tests; this
# searches further. A failing input is written under the package's testdata/fuzz/FuzzX/ and
# becomes a regression test once committed.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-30s}"
GO="${GO:-go}"
failed=0
while IFS=: read -r file name; do
	pkg="./$(dirname "$file")"
	echo "== $pkg $name ($FUZZTIME)"
	if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"; then
		failed=1
	fi
done < <(grep -rHoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' internal test cmd 2>/dev/null \
	| sed -E 's/:func /:/' | sort -u)
exit "$failed"
