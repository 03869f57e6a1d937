#!/usr/bin/env bash
# Starts a local control plane with bin/berth-devcluster, shows berth next to
# it, and stops it. Run it with `make demo`, which builds the binaries first.
set -euo pipefail
cd "$(dirname "$0")/.."

ready_timeout=${READY_TIMEOUT:-120}
dir=$(mktemp -d "${TMPDIR:-/tmp}/berth-demo.XXXXXX")
pid=

say() { printf '\n==> %s\n' "$*"; }

cleanup() {
	local rc=$?
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [[ $rc -ne 0 ]]; then
		echo "demo failed; cluster state and logs kept in $dir" >&2
		for log in "$dir"/logs/*; do
			[[ -f $log ]] || continue
			echo "--- $log (last 20 lines)" >&2
			tail -n 20 "$log" >&2
		done
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT

say "berth version"
bin/berth version

say "starting a local cluster in $dir"
start=$SECONDS
bin/berth-devcluster up --dir "$dir" >"$dir/stdout" 2>"$dir/stderr" &
pid=$!

ready=
while [[ -z $ready ]]; do
	ready=$(grep -m1 '^devcluster ready' "$dir/stdout" || true)
	[[ -n $ready ]] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid" || true
		pid=
		echo "berth-devcluster exited before it was ready:" >&2
		cat "$dir/stderr" >&2
		exit 1
	fi
	if ((SECONDS - start > ready_timeout)); then
		echo "berth-devcluster not ready after ${ready_timeout}s" >&2
		exit 1
	fi
	sleep 0.2
done
echo "$ready"
echo "ready in $((SECONDS - start))s"

say "stopping the cluster"
kill -TERM "$pid"
if wait "$pid"; then
	echo "stopped cleanly"
else
	rc=$?
	pid=
	echo "berth-devcluster exited with status $rc" >&2
	exit 1
fi
pid=
