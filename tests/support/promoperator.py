"""The Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule), for a server-side dry run of
what the chart renders with `enablePrometheus`.

They come from the operator's Go module through the module proxy (`go mod download`), like helm in
devcluster/tools.py, and are cached beside the tools (`<cache>/tools/prometheus-operator-crds-*`),
written under a temporary name, renamed when complete and guarded by a file lock. Never committed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock

from leaderworkerset.devcluster import versions
from leaderworkerset.devcluster.build import COMPLETE_MARKER, publish, staged_output

MODULE = "github.com/prometheus-operator/prometheus-operator"
# The newest version of the root module the proxy serves (`go list -m -versions`, 2026-12-01): the
# proxy lists only v0.85.0 (later tags exist for the pkg/apis/monitoring submodule, without CRDs).
VERSION = "v0.85.0"
CRD_DIR = "example/prometheus-operator-crd"
CRD_FILES = ("monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml")


class ModuleUnavailableError(RuntimeError):
    """`go mod download` could not fetch the module (no proxy, version refused)."""


def crds_dir() -> Path:
    return versions.cache_root() / "tools" / f"prometheus-operator-crds-{VERSION}"


def _complete(path: Path) -> bool:
    return (path / COMPLETE_MARKER).is_file() and all((path / name).is_file() for name in CRD_FILES)


def _download() -> Path:
    """The module's extracted directory in the Go module cache."""
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GO111MODULE": "on"}
    with tempfile.TemporaryDirectory(prefix="lws-promop-") as outside_any_module:
        proc = subprocess.run(
            ["go", "mod", "download", "-json", f"{MODULE}@{VERSION}"],
            cwd=outside_any_module, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError:
        info = {}
    if proc.returncode != 0 or info.get("Error") or not info.get("Dir"):
        raise ModuleUnavailableError(
            f"go mod download {MODULE}@{VERSION}: {info.get('Error') or proc.stderr.strip()}"
        )
    return Path(info["Dir"])


def ensure_crds() -> Path:
    """The directory holding the two CRD files, downloading them once (cached, locked)."""
    out = crds_dir()
    if _complete(out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out.parent / f"{out.name}.lock")):
        if not _complete(out):
            source = _download() / CRD_DIR
            with staged_output(out) as tmp:
                for name in CRD_FILES:
                    shutil.copyfile(source / name, tmp / name)
                publish(tmp, out, f"{MODULE}@{VERSION} {CRD_DIR}\n")
    return out


def crd_documents() -> list[dict[str, Any]]:
    directory = ensure_crds()
    return [doc for name in CRD_FILES for doc in yaml.safe_load_all((directory / name).read_text()) if doc]
