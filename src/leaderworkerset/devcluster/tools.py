"""Build the extra Go tools the tests need: ``helm``, upstream's manager, ``actionlint``, metrics-server
and Kueue's manager.

Each comes from its Go module through the module proxy, exactly like the
control plane in ``build.py``: a wrapper module in ``gomod/<name>`` pins every
dependency (``tool`` directive + go.sum), the output directory is keyed by the
tool's version, the Go version and the machine, written under a temporary
name, renamed when complete and guarded by a file lock so that concurrent
test workers build once.

Upstream's manager is ``sigs.k8s.io/lws`` at the newest version the proxy
serves: v0.9.0. Checked again on 2026-12-04: the proxy refuses v1.0.0 with
403, and answers v0.10.0's ``.info``/``.mod`` but refuses its ``.zip`` (403),
so v0.10.0 cannot be built either. It is used for the swap tests and the
side-by-side benchmarks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from filelock import FileLock

from leaderworkerset.devcluster import versions
from leaderworkerset.devcluster.build import COMPLETE_MARKER, BuildError, go_version, publish, staged_output
from leaderworkerset.devcluster.progress import run_step

RECIPE_REVISION = "1"


@dataclass(frozen=True)
class GoTool:
    """One binary built from a package of a pinned Go module."""

    name: str
    module_dir: str  # wrapper module under devcluster/gomod
    package: str
    version: str
    version_flag: tuple[str, ...]
    version_needle: str  # substring the version output must contain
    ldflags: str = "-s -w"


HELM = GoTool(
    name="helm",
    module_dir="helm",
    package="helm.sh/helm/v3/cmd/helm",
    version="v3.22.0",
    version_flag=("version", "--short"),
    version_needle="v3.22.0",
    # helm prints its version from these variables; without them it says v3.x-dev-ish.
    ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=v3.22.0",
)

UPSTREAM_LWS = GoTool(
    name="lws-upstream-manager",
    module_dir="lws",
    package="sigs.k8s.io/lws/cmd",
    version="v0.9.0",
    version_flag=("--help",),
    version_needle="leader-elect",
)

# The linter of GitHub Actions workflows (.github/workflows/release.yaml); tests/unit/release runs it.
ACTIONLINT = GoTool(
    name="actionlint",
    module_dir="actionlint",
    package="github.com/rhysd/actionlint/cmd/actionlint",
    version="v1.7.12",
    version_flag=("-version",),
    version_needle="v1.7.12",
    # Built as a dependency, its version would read "(devel)" without this.
    ldflags="-s -w -X github.com/rhysd/actionlint.version=v1.7.12",
)

# metrics-server serves the resource metrics API (metrics.k8s.io) that the HPA
# controller reads. It scrapes kwok's simulated kubelet endpoint: kwok serves
# /metrics/nodes/<node>/metrics/resource from its Metric and ClusterResourceUsage
# configuration, and metrics-server follows a node's
# `metrics.k8s.io/resource-metrics-path` annotation to that path. v0.8.0: the proxy
# also serves v0.9.0, but that is not an approved release (the registry's own note).
METRICS_SERVER = GoTool(
    name="metrics-server",
    module_dir="metrics-server",
    package="sigs.k8s.io/metrics-server/cmd/metrics-server",
    version="v0.8.0",
    version_flag=("--version",),
    version_needle="v0.8.0",
    # `--version` prints client-go's gitVersion, as metrics-server's Makefile stamps it.
    ldflags="-s -w -X k8s.io/client-go/pkg/version.gitVersion=v0.8.0",
)

# Kueue's manager, for the tests of its LeaderWorkerSet integration (tests/support/kueue.py). v0.17.0 is
# the only version the proxy lists (`go list -m -versions sigs.k8s.io/kueue`, checked 2026-12-03).
KUEUE = GoTool(
    name="kueue-manager",
    module_dir="kueue",
    package="sigs.k8s.io/kueue/cmd/kueue",
    version="v0.17.0",
    version_flag=("--help",),
    version_needle="visibility-server-port",
    # Kueue logs its version at start from these variables (otherwise "v0.0.0-main").
    ldflags="-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=v0.17.0",
)

TOOLS = {t.name: t for t in (HELM, UPSTREAM_LWS, ACTIONLINT, METRICS_SERVER, KUEUE)}


class ModuleUnavailableError(RuntimeError):
    """`go mod download` could not fetch a module (no proxy, version refused)."""


def module_dir(module: str, version: str) -> Path:
    """The extracted directory of ``module@version`` in Go's module cache (read-only), downloading
    it through the proxy once; for the manifests a module ships beside its code (CRDs, webhooks)."""
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GO111MODULE": "on"}
    with tempfile.TemporaryDirectory(prefix="lws-gomod-") as outside_any_module:
        proc = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            cwd=outside_any_module, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError:
        info = {}
    if proc.returncode != 0 or info.get("Error") or not info.get("Dir"):
        raise ModuleUnavailableError(
            f"go mod download {module}@{version}: {info.get('Error') or proc.stderr.strip()}"
        )
    return Path(info["Dir"])


def tool_dir(tool: GoTool, go: str | None = None) -> Path:
    key = f"{tool.name}-{tool.version}_{go or go_version()}_{versions.machine()}_r{RECIPE_REVISION}"
    return versions.cache_root() / "tools" / key


def _is_complete(path: Path, tool: GoTool) -> bool:
    return (path / COMPLETE_MARKER).is_file() and (path / tool.name).is_file()


def ensure_tool(tool: GoTool) -> Path:
    """Return the path of the built binary, building it once (cached, locked)."""
    out = tool_dir(tool)
    if _is_complete(out, tool):
        return out / tool.name
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out.parent / f"{tool.name}.lock")):
        if not _is_complete(out, tool):
            _build_into(tool, out)
    return out / tool.name


def _build_into(tool: GoTool, out: Path) -> None:
    started = time.monotonic()
    env = dict(os.environ)
    env["CGO_ENABLED"] = "0"
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -mod=readonly -buildvcs=false").strip()
    log = out.parent / (out.name + ".build.log")
    log.write_text("")
    with staged_output(out) as tmp_out:
        with tempfile.TemporaryDirectory(prefix="lws-toolbuild-") as work:
            src = resources.files("leaderworkerset.devcluster") / "gomod" / tool.module_dir
            mod = Path(work) / tool.module_dir
            with resources.as_file(src) as path:
                shutil.copytree(path, mod)
            run_step(
                f"Building {tool.name} {tool.version}",
                [
                    "go",
                    "build",
                    "-trimpath",
                    f"-ldflags={tool.ldflags}",
                    "-o",
                    str(tmp_out / tool.name),
                    tool.package,
                ],
                cwd=mod,
                env=env,
                log=log,
                started=started,
            )
        proc = subprocess.run(
            [str(tmp_out / tool.name), *tool.version_flag], capture_output=True, text=True, check=False
        )
        if tool.version_needle not in proc.stdout + proc.stderr:
            raise BuildError(
                f"{tool.name} {' '.join(tool.version_flag)} printed {(proc.stdout + proc.stderr)[:300]!r}; "
                f"expected it to mention {tool.version_needle!r}"
            )
        seconds = time.monotonic() - started
        publish(tmp_out, out, f"{tool.package}@{tool.version} built in {seconds:.0f}s\n")
