#!/usr/bin/env bash
# Bootstrap a fresh machine (uv + the project's locked virtualenv), then run one of:
#   run CMD...   a command inside the environment (e.g. `run lws up`)
#   lint         ruff, mypy (strict on src/), import-linter layer contracts, generated-artifact drift
#   test         lint, then the whole pytest suite (builds the local control plane on first use)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet --user uv || python3 -m pip install --quiet uv
  export PATH="$HOME/.local/bin:$PATH"
fi
uv sync --quiet --frozen
mode="${1:-test}"; shift || true
lint() {
  uv run ruff check src tests
  uv run ruff format --check src tests
  uv run mypy
  uv run lint-imports
  if [ -x hack/check-generated.sh ]; then ./hack/check-generated.sh; fi
}
case "$mode" in
  run) exec uv run "$@" ;;
  lint) lint ;;
  test)
    lint
    # Build (or reuse from the cache) the local control plane binaries before pytest starts,
    # so that the build's progress is visible and its time is not charged to one test.
    uv run lws cluster bin-dir
    # Likewise Kueue's manager (tests/e2e/ecosystem): a cold build takes minutes, more than a
    # test's timeout allows on a loaded machine.
    uv run lws cluster tool kueue-manager >/dev/null
    # And, as root, what the real-node journey needs (tests/e2e/realnodes): the node binaries and the
    # manager's image (hack/build-image.sh), both cached.
    if [ "$(id -u)" = 0 ]; then uv run python -m tests.support.realnodes; fi
    exec uv run pytest "$@" ;;
  *) echo "usage: $0 run CMD... | lint | test [pytest args]" >&2; exit 2 ;;
esac
