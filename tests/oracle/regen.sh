#!/usr/bin/env bash
# Regenerate the golden vectors of tests/unit/core/golden/ from upstream itself.
#
# cases.py writes the inputs; the Go program in this directory runs them through the revision
# functions of the sigs.k8s.io/lws module (plus apimachinery's Quantity and Go's encoding/json) and
# echoes each input with upstream's answer. Needs Go and the module proxy on first run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
out="${repo}/tests/unit/core/golden/revision_vectors.json"
bin="$(mktemp -d)/lws-oracle"
(cd "${here}" && go build -o "${bin}" .)
mkdir -p "$(dirname "${out}")"
(cd "${repo}" && uv run python tests/oracle/cases.py) | "${bin}" > "${out}.tmp"
mv "${out}.tmp" "${out}"
echo "wrote ${out}"
