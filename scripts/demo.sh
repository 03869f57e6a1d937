#!/usr/bin/env bash
# Starts a local control plane with bin/berth-devcluster, takes the example
# chart examples/charts/shop through its lifecycle with bin/berth (install,
# status, upgrade, history, rollback, uninstall, list), then again as a Release
# of berth controller (install, upgrade, a failed upgrade rolled back,
# deletion). It ends with the shop installed and upgraded once more, and leaves
# the cluster running for berth dashboard (its kubeconfig: bin/demo/kubeconfig;
# make demo-stop stops it). DEMO_KEEP=0 stops the cluster instead.
# Every step must succeed. berth prints its progress (steps, hooks, objects) to
# stderr and its results to stdout; both are shown. Run it with `make demo`,
# which builds the binaries first.
set -euo pipefail
cd "$(dirname "$0")/.."

chart=examples/charts/shop
release=shop
namespace=shop

ready_timeout=${READY_TIMEOUT:-120}
keep=${DEMO_KEEP:-1}
# The cluster lives in bin/demo, so that berth dashboard finds it after the demo; the
# cluster of an earlier demo is stopped first.
dir=$PWD/bin/demo
scripts/demo-stop.sh
mkdir -p "$dir"
pid=
controller=

say() { printf '\n==> %s\n' "$*"; }

# now_ms prints the time in milliseconds: exact with bash 5's EPOCHREALTIME,
# to the second with older shells.
now_ms() {
	if [[ -n ${EPOCHREALTIME:-} ]]; then
		local t=${EPOCHREALTIME//[.,]/}
		echo $((10#$t / 1000))
	else
		echo $((SECONDS * 1000))
	fi
}

# since T prints the time since now_ms printed T, in seconds to a tenth.
since() {
	local ms=$(($(now_ms) - $1))
	printf '%d.%01ds' $((ms / 1000)) $((ms % 1000 / 100))
}

# berth prints the command, runs it and says how long it took; set -e stops the
# demo when it fails.
berth() {
	say "berth $*"
	local t
	t=$(now_ms)
	bin/berth "$@"
	echo "($(since "$t"))"
}

cleanup() {
	local rc=$?
	if [[ -n $controller ]] && kill -0 "$controller" 2>/dev/null; then
		kill -TERM "$controller" 2>/dev/null || true
		wait "$controller" 2>/dev/null || true
	fi
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [[ $rc -ne 0 ]]; then
		echo "demo failed; cluster state and logs kept in $dir" >&2
		for log in "$dir"/logs/* "$dir"/controller.log; do
			[[ -f $log ]] || continue
			echo "--- $log (last 20 lines)" >&2
			tail -n 20 "$log" >&2
		done
	elif [[ $keep != 1 ]]; then
		rm -rf "$dir"
	fi
}
trap cleanup EXIT

demo_start=$(now_ms)
berth version

say "starting a local cluster in $dir"
start=$SECONDS
bin/berth-devcluster up --dir "$dir" >"$dir/stdout" 2>"$dir/stderr" &
pid=$!
echo "$pid" >"$dir/pid"

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
export KUBECONFIG=$dir/kubeconfig

berth install "$release" "$chart" -n "$namespace" --create-namespace --wait
berth status "$release" -n "$namespace"
berth upgrade "$release" "$chart" -n "$namespace" --set replicaCount=3 --wait
berth history "$release" -n "$namespace"
berth rollback "$release" 1 -n "$namespace" --wait
berth history "$release" -n "$namespace"
berth uninstall "$release" -n "$namespace"
berth list -A
left=$(bin/berth list -A --short)
if [[ -n $left ]]; then
	echo "releases left after uninstall: $left" >&2
	exit 1
fi
echo "no release left"

# The same chart as a Release of berth controller. The controller's chart
# installs the Release CRD and the controller's rights; the controller itself
# runs here, out of the cluster (replicas=0: no container runs on this cluster).
berth install berth-controller charts/berth-controller -n berth-system --create-namespace --set replicas=0
say "berth controller, in the background (its log: $dir/controller.log)"
bin/berth controller --metrics-bind-address 0 --health-probe-bind-address 0 >"$dir/controller.log" 2>&1 &
controller=$!

# examples/charts/shop-release holds the Release shop, the account it acts as
# and the packaged shop chart; berth waits for the Release as for any object.
cp -r examples/charts/shop-release "$dir/shop-release"
bin/berth package "$chart" -d "$dir/shop-release" >/dev/null
berth install shop-release "$dir/shop-release" -n shop-ctl --create-namespace --wait=ordered
berth history "$release" -n shop-ctl
berth upgrade shop-release "$dir/shop-release" -n shop-ctl --set shop.replicaCount=3 --wait=ordered
berth history "$release" -n shop-ctl
# The shop's Pods crash-loop 3 s after they are Ready: within the upgrade's
# watch window, so the controller rolls the shop back, and the Release is
# Stalled (it has no retries): berth upgrade fails, naming it.
say "berth upgrade shop-release, whose shop crash-loops in its watch window"
if bin/berth upgrade shop-release "$dir/shop-release" -n shop-ctl --wait=ordered --timeout 3m --set watchFor=15s \
	--set-string 'shop.podAnnotations.devcluster\.berth\.dev/outcome=crashloop' \
	--set-string 'shop.podAnnotations.devcluster\.berth\.dev/run=3s'; then
	echo "the upgrade whose Pods crash-loop succeeded" >&2
	exit 1
fi
berth history "$release" -n shop-ctl
berth uninstall shop-release -n shop-ctl --wait=ordered
berth list -A
if [[ -n $(bin/berth list -n shop-ctl --short) ]]; then
	echo "releases left in shop-ctl after the Release was deleted" >&2
	exit 1
fi
kill -TERM "$controller"
wait "$controller" || true
controller=

# What berth dashboard shows after the demo: the shop installed, with its hooks,
# and upgraded, so that its history has two revisions to compare.
berth install "$release" "$chart" -n "$namespace" --wait
berth upgrade "$release" "$chart" -n "$namespace" --set replicaCount=2 --wait

if [[ $keep == 1 ]]; then
	say "the cluster keeps running for berth dashboard"
	echo "  KUBECONFIG=$dir/kubeconfig bin/berth dashboard"
	echo "shows the shop, its history, its diff, its objects and its hooks; make demo-stop stops the cluster."
	pid=
	say "demo finished in $(since "$demo_start")"
	exit 0
fi

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
rm -f "$dir/pid"

say "demo finished in $(since "$demo_start")"
