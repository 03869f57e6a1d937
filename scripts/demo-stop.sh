#!/usr/bin/env bash
# Stops the cluster that make demo left running in bin/demo for berth dashboard, and removes
# it. Nothing to do when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=bin/demo
if [[ -f $dir/pid ]]; then
	pid=$(cat "$dir/pid")
	if kill -0 "$pid" 2>/dev/null; then
		echo "stopping the demo's cluster (pid $pid)"
		kill -TERM "$pid"
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "the demo's cluster (pid $pid) did not stop within 10s" >&2
			exit 1
		fi
	fi
fi
rm -rf "$dir"
