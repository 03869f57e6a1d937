#!/usr/bin/env bash
# Builds the devcluster binary to $1. The API server reports the Kubernetes version devcluster is
# built from (charts check it against their kubeVersion), which Kubernetes takes from link flags.
set -euo pipefail
out=${1:?usage: build.sh OUTPUT}
cd "$(dirname "$0")"
version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
pkg=k8s.io/component-base/version
go build -buildvcs=false -ldflags "-X $pkg.gitVersion=$version -X $pkg.gitTreeState=clean" -o "$out" .
