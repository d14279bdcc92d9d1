#!/usr/bin/env bash
# Bootstrap a fresh machine (uv + the project's locked virtualenv), then run one of:
#   run CMD...            a command inside the environment (e.g. `run lws up`)
#   lint                  ruff (src, tests, the example programs), mypy (strict on src/), import-linter
#                         layer contracts, generated-artifact drift
#   check                 lint, then the unit tests (no cluster, no build): the loop while editing
#   tier TIER [ARGS...]   one tier of tests (unit, integration, e2e, chaos), after building what it needs
#   test [ARGS...]        lint, then the whole pytest suite (builds the local control plane on first use)
# ARGS go to pytest. The cluster tiers run on LWS_TEST_WORKERS pytest-xdist workers (default 2, each
# with its own clusters; tests/support/parallel.py says what shares a worker, and what runs alone at
# the end); LWS_TEST_WORKERS=0 runs them serially. Unit tests run on one worker per core.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet --user uv || python3 -m pip install --quiet uv
  export PATH="$HOME/.local/bin:$PATH"
fi
uv sync --quiet --frozen
mode="${1:-test}"; shift || true
workers="${LWS_TEST_WORKERS:-2}"
lint() {
  uv run ruff check src tests docs/examples
  uv run ruff format --check src tests docs/examples
  uv run mypy
  uv run lint-imports
  if [ -x hack/check-generated.sh ]; then ./hack/check-generated.sh; fi
}
# pytest over xdist workers (none with 0), every option after the caller's.
pytest_on() {
  local n="$1"; shift
  if [ "$n" = 0 ]; then exec uv run pytest "$@"; fi
  exec uv run pytest -n "$n" --dist loadgroup "$@"
}
case "$mode" in
  run) exec uv run "$@" ;;
  lint) lint ;;
  check)
    lint
    pytest_on auto tests/unit "$@" ;;
  tier)
    tier="${1:?usage: $0 tier unit|integration|e2e|chaos [pytest args]}"; shift
    # What the tier's tests start (control plane, Go tools, real-node binaries and images), built or
    # found in the cache before pytest starts: a cold build's minutes are not charged to one test.
    uv run python -m tests.support.prebuild "$tier"
    if [ "$tier" = unit ]; then pytest_on auto tests/unit "$@"; fi
    pytest_on "$workers" "tests/$tier" "$@" ;;
  test)
    lint
    uv run python -m tests.support.prebuild
    pytest_on "$workers" "$@" ;;
  *) echo "usage: $0 run CMD... | lint | check [pytest args] | tier TIER [pytest args] | test [pytest args]" >&2
     exit 2 ;;
esac
