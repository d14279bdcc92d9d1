"""Helpers of the CRD integration tests: upstream objects and schemas, generic resources, diffs."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import yaml
from lightkube.core.resource import NamespacedResource
from lightkube.generic_resource import create_namespaced_resource

from leaderworkerset.api import constants as c
from leaderworkerset.crd.packaged import CRD_FILES, crd_documents
from leaderworkerset.devcluster.cluster import LocalCluster
from tests.support import upstream

_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

LWS = create_namespaced_resource(c.LWS_GROUP, c.LWS_VERSION, c.LWS_KIND, c.LWS_PLURAL)
DS = create_namespaced_resource(c.DS_GROUP, c.DS_VERSION, c.DS_KIND, c.DS_PLURAL)
DSRS = create_namespaced_resource(c.DS_GROUP, c.DS_VERSION, c.DSRS_KIND, c.DSRS_PLURAL)
OUR_KINDS: Final[dict[str, type[NamespacedResource]]] = {
    c.LWS_KIND: LWS,
    c.DS_KIND: DS,
    c.DSRS_KIND: DSRS,
}
_FILE_OF_KIND: Final = dict(zip((c.LWS_KIND, c.DS_KIND, c.DSRS_KIND), CRD_FILES, strict=True))


# Upstream's own CRDs are installed next to ours under renamed groups, so that the same object can be
# sent to both and what each stores (or rejects) compared directly. The renamed groups sort after
# ours: kubectl resolves a plural or short name both CRDs declare to the first group in discovery
# order (alphabetical among CRDs), and `kubectl get lws` must keep meaning ours in later tests.
UPSTREAM_GROUPS: Final = {
    c.LWS_GROUP: "leaderworkerset.z-upstream.test",
    c.DS_GROUP: "disaggregatedset.z-upstream.test",
}
UPSTREAM_KINDS: Final[dict[str, type[NamespacedResource]]] = {
    kind: create_namespaced_resource(UPSTREAM_GROUPS[group], "v1", kind, plural)
    for kind, group, plural in (
        (c.LWS_KIND, c.LWS_GROUP, c.LWS_PLURAL),
        (c.DS_KIND, c.DS_GROUP, c.DS_PLURAL),
        (c.DSRS_KIND, c.DS_GROUP, c.DSRS_PLURAL),
    )
}


def upstream_crd_documents() -> list[dict[str, Any]]:
    """Upstream's three CRDs, unchanged except for their group (and hence their name)."""
    documents = []
    for name in CRD_FILES:
        crd = yaml.load(upstream.require("crds", name).read_text(encoding="utf-8"), Loader=_LOADER)
        group = UPSTREAM_GROUPS[crd["spec"]["group"]]
        crd["spec"]["group"] = group
        crd["metadata"] = {"name": f"{crd['spec']['names']['plural']}.{group}"}
        documents.append(crd)
    return documents


def for_upstream(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of one of our objects addressed to upstream's renamed CRD."""
    group, _, version = obj["apiVersion"].partition("/")
    return {**obj, "apiVersion": f"{UPSTREAM_GROUPS[group]}/{version}"}


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@functools.cache
def upstream_schema(kind: str) -> dict[str, Any]:
    text = upstream.require("crds", _FILE_OF_KIND[kind]).read_text(encoding="utf-8")
    return _schema(yaml.load(text, Loader=_LOADER))


@functools.cache
def our_schema(kind: str) -> dict[str, Any]:
    return _schema(dict(zip(CRD_FILES, crd_documents(), strict=True))[_FILE_OF_KIND[kind]])


def upstream_documents() -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(file, index, object) for every API object in upstream's samples and examples.

    The controller Configuration sample is a configuration file, not an API object, so it is left out.
    """
    for folder in ("samples", "examples"):
        for path in upstream.files(folder):
            docs = [d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_LOADER) if d]
            for index, doc in enumerate(docs):
                if doc.get("kind") == c.CONFIG_KIND:
                    continue
                yield f"{folder}/{path.name}", index, doc


def diff_paths(want: Any, got: Any, path: str = "") -> list[str]:
    """Paths where two JSON values differ (a missing key counts as a difference)."""
    if isinstance(want, dict) and isinstance(got, dict):
        found: list[str] = []
        for key in sorted(set(want) | set(got)):
            if key not in want or key not in got:
                found.append(f"{path}.{key}")
            else:
                found.extend(diff_paths(want[key], got[key], f"{path}.{key}"))
        return found
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [
            p
            for i, (a, b) in enumerate(zip(want, got, strict=True))
            for p in diff_paths(a, b, f"{path}[{i}]")
        ]
    return [] if want == got else [path]


async def kubectl(cluster: LocalCluster, *args: str, binary: Path | None = None) -> str:
    process = await asyncio.create_subprocess_exec(
        str(binary or cluster.kubectl),
        f"--kubeconfig={cluster.kubeconfig}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()
