#!/usr/bin/env bash
# Fails when committed generated files differ from what their generators produce now:
# the CRDs (all three copies), the install manifests and the Go field table used for revision hashing.
# Regenerates into a temporary directory (the tree is never modified) and diffs both copies:
# the packaged one (src/leaderworkerset/crd/manifests) and the deploy one (deploy/crds).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$repo"
uv run --quiet python -m leaderworkerset.crd.generate --out "$tmp/crds" >/dev/null

status=0
for committed in src/leaderworkerset/crd/manifests deploy/crds charts/lws/crds; do
  if ! diff -r -u "$committed" "$tmp/crds" >"$tmp/diff.txt"; then
    echo "generated CRDs in $committed are stale; run: uv run python -m leaderworkerset.crd.generate" >&2
    head -n 60 "$tmp/diff.txt" >&2
    status=1
  fi
done
# The install manifests (namespace, RBAC, manager Deployment, Services, webhooks) and the chart's rules.
uv run --quiet python -m leaderworkerset.install.generate --root "$tmp/install" >/dev/null
for generated in deploy/manifests/install.yaml charts/lws/files/rbac; do
  if ! diff -r -u "$generated" "$tmp/install/$generated" >"$tmp/diff.txt"; then
    echo "$generated is stale; run: uv run python -m leaderworkerset.install.generate" >&2
    head -n 60 "$tmp/diff.txt" >&2
    status=1
  fi
done
# The Go field table behind revision hashing (core/gocompat/data/gofields.json) is generated from k8s.io/api.
if ! hack/gofields/regen.sh --check >&2; then
  status=1
fi
exit "$status"
