"""Private per-revision Services.

Once every role of the target revision in a slice has at least one ready replica, each of those
child LWS gets a headless Service `<lws>-prv` selecting exactly its pods (DS name, role, revision,
slice), controlled by the child LWS so that it goes away with the drained LWS. Services are created
once and never updated. Services an older controller made DS-owned are handed to their LWS in place;
DS-owned ones whose LWS is gone are deleted; a same-named Service controlled by anyone else is an
error, never adopted.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated.children import status_count
from leaderworkerset.core.disaggregated.naming import private_service_name, role_of
from leaderworkerset.core.objects import (
    Obj,
    controller_owner,
    is_controlled_by,
    labels_of,
    lws_owner_reference,
    metadata,
    name_of,
)

_SELECTOR_KEYS = (c.LABEL_DS_NAME, c.LABEL_DS_ROLE, c.LABEL_DS_REVISION, c.LABEL_DS_SLICE)


def revision_ready(roles: Sequence[str], target: Sequence[Obj]) -> bool:
    """Every role has a target-revision child with ≥1 ready replica."""
    by_role = {role_of(lws): lws for lws in target}
    return all(role in by_role and status_count(by_role[role], "readyReplicas") >= 1 for role in roles)


def build_private_service(lws: Obj) -> dict[str, Any]:
    labels = labels_of(lws)
    selector = {key: labels[key] for key in _SELECTOR_KEYS if labels.get(key)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": private_service_name(name_of(lws)),
            "namespace": metadata(lws).get("namespace"),
            "labels": dict(selector),
            "ownerReferences": [lws_owner_reference(lws)],
        },
        "spec": {"clusterIP": "None", "selector": selector},
    }


def wanted_services(roles: Sequence[str], target: Sequence[Obj]) -> list[dict[str, Any]]:
    """The Services of one slice's target revision, or none until all its roles serve."""
    if not revision_ready(roles, target):
        return []
    by_role = {role_of(lws): lws for lws in target}
    return [build_private_service(by_role[role]) for role in roles]


@dataclass(frozen=True)
class ServiceVerdict:
    kind: str  # "ours" | "migrate" | "delete" | "conflict"
    lws: Obj | None = None


def judge_existing(service: Obj, ds: Obj, children: Mapping[str, Obj]) -> ServiceVerdict:
    """What to do with an existing Service named like a child's private Service.

    `children` maps child LWS name → child, for the DS's live children."""
    owner = controller_owner(service)
    name = name_of(service)
    lws = (
        children.get(name.removesuffix(c.DS_PRIVATE_SERVICE_SUFFIX))
        if name.endswith(c.DS_PRIVATE_SERVICE_SUFFIX)
        else None
    )
    if lws is not None and owner is not None and owner.get("uid") == metadata(lws).get("uid"):
        return ServiceVerdict("ours", lws)
    if (
        is_controlled_by(service, ds)
        and name.endswith(c.DS_PRIVATE_SERVICE_SUFFIX)
        and labels_of(service).get(c.LABEL_DS_ROLE)
    ):
        return ServiceVerdict("migrate", lws) if lws is not None else ServiceVerdict("delete")
    return ServiceVerdict("conflict", lws)


def legacy_services(
    ds: Obj, services: Iterable[Obj], children: Mapping[str, Obj]
) -> list[tuple[Obj, ServiceVerdict]]:
    """DS-controlled private Services (an older controller's) and what becomes of each."""
    result = []
    for service in services:
        if not is_controlled_by(service, ds):
            continue
        verdict = judge_existing(service, ds, children)
        if verdict.kind in ("migrate", "delete"):
            result.append((service, verdict))
    return result
