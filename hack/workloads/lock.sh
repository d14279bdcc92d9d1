#!/usr/bin/env bash
# Lock the workload images' Python packages: hack/workloads/RUNTIME/requirements.in (the pins a person
# edits) -> requirements.txt (every dependency pinned, with the hashes of every wheel and sdist, for
# every platform), resolved for the CPython of the images' Debian (trixie: 3.13).
#
#   hack/workloads/lock.sh [RUNTIME...]      # default: every directory here with a requirements.in
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python_version=3.13
runtimes=("$@")
if [ ${#runtimes[@]} -eq 0 ]; then
  for dir in "$here"/*/; do [ -f "$dir/requirements.in" ] && runtimes+=("$(basename "$dir")"); done
fi
for runtime in "${runtimes[@]}"; do
  echo "==> $runtime"
  (cd "$here/$runtime" && uv pip compile --quiet --universal --python-version "$python_version" \
    --generate-hashes requirements.in -o requirements.txt)
done
