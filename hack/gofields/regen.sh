#!/usr/bin/env bash
# Regenerate src/leaderworkerset/core/gocompat/data/gofields.json from the k8s.io/api Go types.
# With --check, fail (exit 1) instead of writing when the committed table is stale.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
table="${here}/../../src/leaderworkerset/core/gocompat/data/gofields.json"
fresh="$(mktemp)"
trap 'rm -f "${fresh}"' EXIT
(cd "${here}" && go run . > "${fresh}")
if [[ "${1:-}" == "--check" ]]; then
  if ! diff -q "${table}" "${fresh}" > /dev/null; then
    echo "gofields.json is stale: run hack/gofields/regen.sh" >&2
    exit 1
  fi
  echo "gofields.json is up to date"
else
  cp "${fresh}" "${table}"
  echo "wrote ${table}"
fi
