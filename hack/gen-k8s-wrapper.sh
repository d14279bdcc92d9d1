#!/usr/bin/env bash
# Write the wrapper module that builds the Kubernetes control plane at one version:
#   hack/gen-k8s-wrapper.sh v1.36.3
# into src/leaderworkerset/devcluster/gomod/k8s/v1.36/. Kubernetes' own go.mod resolves its staging
# modules (k8s.io/api, ...) with local `replace` lines that a dependent module cannot see, so the
# wrapper replaces each `k8s.io/<name> v0.0.0` requirement with its published v0.X.Y tag. Only
# the exact `v0.0.0` lines are staging modules (k8s.io/utils and kube-openapi use pseudo-versions).
# The control-plane binaries, kubectl and the node binaries (kubelet, kube-proxy) are listed as tools so that `go mod tidy` keeps every package they import.
set -euo pipefail
version=${1:?usage: $0 v1.X.Y}
minor=${version%.*}
staging=v0.${version#v1.}
out="$(cd "$(dirname "$0")/.." && pwd)/src/leaderworkerset/devcluster/gomod/k8s/$minor"
mkdir -p "$out"
cd "$out"
rm -f go.mod go.sum
go mod init lws.local/devcluster/k8s >/dev/null 2>&1
go mod edit -go=1.26.0
kube_gomod=$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$version" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["GoMod"])')
for module in $(grep -E '^\s+k8s.io/[a-z0-9-]+ v0\.0\.0$' "$kube_gomod" | awk '{print $1}'); do
  go mod edit -replace "$module=$module@$staging"
done
go mod edit -require "k8s.io/kubernetes@$version"
for binary in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
  go mod edit -tool "k8s.io/kubernetes/cmd/$binary"
done
GOFLAGS=-mod=mod go mod tidy
echo "wrote $out"
