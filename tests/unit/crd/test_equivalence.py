"""Our generated CRDs against upstream's (the pre-v1.0 snapshot in the upstream data's ``crds/``).

At every schema path upstream has, ours must carry the same facts (type, format, default, enum,
bounds, required-ness, nullable-ness, x-kubernetes-* extensions, CEL rules); names, scope,
subresources, short names and printer columns must be equal. Everything we add on top is listed
below, explicitly, as the allowed superset.
"""

from __future__ import annotations

import functools
import itertools
import json
from typing import Any, Final

import pytest
import yaml

from leaderworkerset.crd.compare import additions, differences
from leaderworkerset.crd.markers import DS_REPLICAS_MESSAGE, DS_REPLICAS_MESSAGE_V1, DS_REPLICAS_RULE
from leaderworkerset.crd.packaged import CRD_FILES, crd_documents
from tests.support import upstream

LWS_FILE, DS_FILE, DSRS_FILE = CRD_FILES

# Where we follow upstream main after v1.0 instead of the snapshot (docs/compatibility.md, "Upstream
# main after v1.0"): (file, path, fact) -> (snapshot's value, ours). Each only admits more objects.
ALLOWED_CHANGES: Final = {
    (DS_FILE, ".spec.roles", "minItems"): (2, 1),
    (DS_FILE, ".spec", "x-kubernetes-validations"): (
        [{"message": DS_REPLICAS_MESSAGE_V1, "rule": DS_REPLICAS_RULE}],
        [{"message": DS_REPLICAS_MESSAGE, "rule": DS_REPLICAS_RULE}],
    ),
}

# v1.0 fields of LeaderWorkerSetSpec / LeaderWorkerTemplate, the unconfirmed podTerminationPolicy and
# upstream main's restartBackoff, relative to an LWS spec.
_LWS_SPEC_ADDITIONS: Final = (
    ".groupIdentity",
    ".groupReplacementPolicy",
    ".scheduling",
    ".podTerminationPolicy",
    ".leaderWorkerTemplate.maxGroupRestarts",
    ".leaderWorkerTemplate.restartBackoff",
)

# Fields that Kubernetes 1.37's PodTemplateSpec / PersistentVolumeClaim have and the k8s.io/api
# version upstream generated its snapshot with does not; relative to a pod template.
_CONTAINER_ADDITIONS: Final = (
    ".lifecycle.postStart.httpGet.protocol",
    ".lifecycle.preStop.httpGet.protocol",
    ".livenessProbe.grpc.mode",
    ".livenessProbe.httpGet.protocol",
    ".readinessProbe.grpc.mode",
    ".readinessProbe.httpGet.protocol",
    ".startupProbe.grpc.mode",
    ".startupProbe.httpGet.protocol",
    ".volumeMounts[].bindMountOptions",
)
_POD_TEMPLATE_ADDITIONS: Final = (
    *(
        f".spec.{kind}[]{suffix}"
        for kind, suffix in itertools.product(
            ("containers", "initContainers", "ephemeralContainers"), _CONTAINER_ADDITIONS
        )
    ),
    ".spec.evictionResponders",
    ".spec.volumes[].configMap.defaultUser",
    ".spec.volumes[].configMap.items[].user",
    ".spec.volumes[].downwardAPI.defaultUser",
    ".spec.volumes[].downwardAPI.items[].user",
    ".spec.volumes[].emptyDir.mode",
    ".spec.volumes[].projected.defaultUser",
    ".spec.volumes[].projected.sources[].clusterTrustBundle.user",
    ".spec.volumes[].projected.sources[].configMap.items[].user",
    ".spec.volumes[].projected.sources[].downwardAPI.items[].user",
    ".spec.volumes[].projected.sources[].podCertificate.user",
    ".spec.volumes[].projected.sources[].secret.items[].user",
    ".spec.volumes[].projected.sources[].serviceAccountToken.user",
    ".spec.volumes[].secret.defaultUser",
    ".spec.volumes[].secret.items[].user",
)
_PVC_ADDITIONS: Final = (".status.healthStatus",)


def _lws_spec_additions(spec_path: str) -> set[str]:
    lwt = f"{spec_path}.leaderWorkerTemplate"
    templates = (f"{lwt}.workerTemplate", f"{lwt}.leaderTemplate")
    return (
        {spec_path + suffix for suffix in _LWS_SPEC_ADDITIONS}
        | {t + suffix for t in templates for suffix in _POD_TEMPLATE_ADDITIONS}
        | {f"{lwt}.volumeClaimTemplates[]{suffix}" for suffix in _PVC_ADDITIONS}
    )


ALLOWED_ADDITIONS: Final = {
    LWS_FILE: _lws_spec_additions(".spec"),
    # Upstream main after v1.0: scaling during a rollout (KEP-1022).
    DS_FILE: _lws_spec_additions(".spec.roles[].spec") | {".spec.scalingPolicy"},
    DSRS_FILE: set(),
}

# Printer columns we add where upstream has none (names; upstream's columns must stay as they are).
ALLOWED_EXTRA_COLUMNS: Final = {
    LWS_FILE: set(),
    DS_FILE: {"Slices", "Available", "Progressing", "Age"},
    DSRS_FILE: set(),
}


_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _upstream(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.load(upstream.require("crds", name).read_text(), Loader=_LOADER)
    return document


@functools.cache
def _all_ours() -> dict[str, dict[str, Any]]:
    return dict(zip(CRD_FILES, crd_documents(), strict=True))


def _ours(name: str) -> dict[str, Any]:
    return _all_ours()[name]


def _version(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    result: dict[str, Any] = version
    return result


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = _version(crd)["schema"]["openAPIV3Schema"]
    return schema


CRDS = [pytest.param(name, id=name.removesuffix(".yaml")) for name in CRD_FILES]


@pytest.mark.parametrize("name", CRDS)
def test_every_upstream_schema_path_has_the_same_facts(name: str) -> None:
    found = differences(_schema(_upstream(name)), _schema(_ours(name)))
    unexpected = [d for d in found if ALLOWED_CHANGES.get((name, d.path, d.fact)) != (d.want, d.got)]
    assert unexpected == [], "\n".join(str(d) for d in unexpected)


def test_every_allowed_change_is_still_a_change() -> None:
    changed = {
        (name, d.path, d.fact)
        for name in CRD_FILES
        for d in differences(_schema(_upstream(name)), _schema(_ours(name)))
    }
    assert set(ALLOWED_CHANGES) <= changed


@pytest.mark.parametrize("name", CRDS)
def test_only_the_listed_additions_are_new(name: str) -> None:
    added = set(additions(_schema(_upstream(name)), _schema(_ours(name))))
    assert added == ALLOWED_ADDITIONS[name]


@pytest.mark.parametrize("name", CRDS)
@pytest.mark.parametrize(
    "path",
    [
        pytest.param(("metadata", "name"), id="crd name"),
        pytest.param(("spec", "group"), id="group"),
        pytest.param(("spec", "names"), id="names and short names"),
        pytest.param(("spec", "scope"), id="scope"),
    ],
)
def test_identity_matches_upstream(name: str, path: tuple[str, str]) -> None:
    outer, inner = path
    assert _ours(name)[outer][inner] == _upstream(name)[outer][inner]


@pytest.mark.parametrize("name", CRDS)
@pytest.mark.parametrize("key", ["name", "served", "storage", "subresources"])
def test_version_facts_match_upstream(name: str, key: str) -> None:
    assert _version(_ours(name))[key] == _version(_upstream(name))[key]


@pytest.mark.parametrize("name", CRDS)
def test_printer_columns_keep_upstreams_and_add_only_the_listed(name: str) -> None:
    theirs = _version(_upstream(name)).get("additionalPrinterColumns", [])
    ours = _version(_ours(name)).get("additionalPrinterColumns", [])
    assert ours[: len(theirs)] == theirs
    extra = {column["name"] for column in ours[len(theirs) :]}
    assert extra == ALLOWED_EXTRA_COLUMNS[name]


def test_embedded_kubernetes_schemas_never_preserve_unknown_fields() -> None:
    for name in CRD_FILES:
        assert "x-kubernetes-preserve-unknown-fields" not in json.dumps(_schema(_ours(name)))
