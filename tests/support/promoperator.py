"""The Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule), for a server-side dry run of
what the chart renders with `enablePrometheus`.

They come from the operator's Go module through the module proxy (`go mod download`), like helm in
devcluster/tools.py, and are cached beside the tools (`<cache>/tools/prometheus-operator-crds-*`),
written under a temporary name, renamed when complete and guarded by a file lock. Never committed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock

from leaderworkerset.devcluster import tools, versions
from leaderworkerset.devcluster.build import COMPLETE_MARKER, publish, staged_output

MODULE = "github.com/prometheus-operator/prometheus-operator"
# The newest version of the root module the proxy serves (`go list -m -versions`, 2026-12-01): the
# proxy lists only v0.85.0 (later tags exist for the pkg/apis/monitoring submodule, without CRDs).
VERSION = "v0.85.0"
CRD_DIR = "example/prometheus-operator-crd"
CRD_FILES = ("monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml")


def crds_dir() -> Path:
    return versions.cache_root() / "tools" / f"prometheus-operator-crds-{VERSION}"


def _complete(path: Path) -> bool:
    return (path / COMPLETE_MARKER).is_file() and all((path / name).is_file() for name in CRD_FILES)


def ensure_crds() -> Path:
    """The directory holding the two CRD files, downloading them once (cached, locked)."""
    out = crds_dir()
    if _complete(out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out.parent / f"{out.name}.lock")):
        if not _complete(out):
            source = tools.module_dir(MODULE, VERSION) / CRD_DIR
            with staged_output(out) as tmp:
                for name in CRD_FILES:
                    shutil.copyfile(source / name, tmp / name)
                publish(tmp, out, f"{MODULE}@{VERSION} {CRD_DIR}\n")
    return out


def crd_documents() -> list[dict[str, Any]]:
    directory = ensure_crds()
    return [doc for name in CRD_FILES for doc in yaml.safe_load_all((directory / name).read_text()) if doc]
