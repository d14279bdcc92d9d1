#!/usr/bin/env bash
# Write the wrapper module that builds the Kubernetes control plane at one version:
#   hack/gen-k8s-wrapper.sh v1.36.3
#   GOTOOLCHAIN=go1.27.3 hack/gen-k8s-wrapper.sh --control-plane-only v1.38.0-beta.0
# into src/leaderworkerset/devcluster/gomod/k8s/v1.X/. Kubernetes' own go.mod resolves its staging
# modules (k8s.io/api, ...) with local `replace` lines that a dependent module cannot see, so the
# wrapper replaces each `k8s.io/<name> v0.0.0` requirement with its published v0.X.Y tag. Only
# the exact `v0.0.0` lines are staging modules (k8s.io/utils and kube-openapi use pseudo-versions).
# The control-plane binaries, kubectl and the node binaries (kubelet, kube-proxy) are listed as tools
# so that `go mod tidy` keeps every package they import. --control-plane-only leaves the node
# binaries out, for a version whose node binaries import a module the Go module proxy does not serve
# (versions.NODES_UNAVAILABLE says which and why).
# When Kubernetes' go line is newer than the local Go, the wrapper also records the toolchain that
# builds it (`toolchain` line, from GOTOOLCHAIN) and the build exports it.
set -euo pipefail
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
if [[ ${1:-} == --control-plane-only ]]; then
  binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
  shift
fi
version=${1:?usage: $0 [--control-plane-only] v1.X.Y[-pre.N]}
# v1.38.0-beta.0 -> v1.38 (not ${version%.*}, which would keep "0-beta").
minor=v1.$(echo "${version#v1.}" | cut -d. -f1)
staging=v0.${version#v1.}
out="$(cd "$(dirname "$0")/.." && pwd)/src/leaderworkerset/devcluster/gomod/k8s/$minor"

# `go list -m` reads Kubernetes' go.mod without loading it, so it works even when that go.mod needs
# a newer Go than the local one.
kube_gomod=$(GOTOOLCHAIN=local go list -m -json "k8s.io/kubernetes@$version" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["GoMod"])')
kube_go=$(awk '$1 == "go" {print $2; exit}' "$kube_gomod")
# The wrapper's go line (which also sets the binaries' default GODEBUG) is Kubernetes' own, but never below
# 1.26.0, what every wrapper of 1.34-1.37 was generated with: regenerating them changes nothing.
wrapper_go=$(printf '%s\n%s\n' "$kube_go" 1.26.0 | sort -V | tail -1)
local_go=$(GOTOOLCHAIN=local go env GOVERSION)
toolchain=""
if [[ $(printf '%s\n%s\n' "go$kube_go" "$local_go" | sort -V | tail -1) != "$local_go" ]]; then
  toolchain=${GOTOOLCHAIN:-}
  if [[ ! $toolchain =~ ^go[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "k8s.io/kubernetes@$version needs Go >= $kube_go, newer than $local_go: name the toolchain that" \
      "builds it, e.g. GOTOOLCHAIN=go${kube_go%.*}.3 $0 $*" >&2
    exit 2
  fi
  export GOTOOLCHAIN=$toolchain
else
  export GOTOOLCHAIN=local
fi

mkdir -p "$out"
cd "$out"
rm -f go.mod go.sum
go mod init lws.local/devcluster/k8s >/dev/null 2>&1
go mod edit -go="$wrapper_go"
if [[ -n $toolchain ]]; then
  go mod edit -toolchain="$toolchain"
fi
for module in $(grep -E '^\s+k8s.io/[a-z0-9-]+ v0\.0\.0$' "$kube_gomod" | awk '{print $1}'); do
  go mod edit -replace "$module=$module@$staging"
done
go mod edit -require "k8s.io/kubernetes@$version"
for binary in "${binaries[@]}"; do
  go mod edit -tool "k8s.io/kubernetes/cmd/$binary"
done
GOFLAGS=-mod=mod go mod tidy
echo "wrote $out"
