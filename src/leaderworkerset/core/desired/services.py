"""Headless Services that give groups their DNS names.

* Shared (default): one Service `<lws>` selecting every pod of the set, owned by the LWS.
* UniquePerReplica: one Service per group named after the leader's subdomain, selecting that
  group's pods, owned by the leader pod (so it goes away with the group).

Both are create-only (never updated) and publish not-ready addresses, so group members can resolve
each other while they are still starting.
"""

from collections.abc import Mapping
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired.statefulsets import subdomain_policy
from leaderworkerset.core.groups.naming import replica_service_name, shared_service_name
from leaderworkerset.core.objects import (
    Obj,
    labels_of,
    lws_owner_reference,
    name_of,
    namespace_of,
    pod_owner_reference,
)

_HEADLESS = "None"


def headless_service(
    *,
    name: str,
    namespace: str,
    lws_name: str,
    selector: Mapping[str, str],
    owner_reference: Mapping[str, Any],
) -> dict[str, Any]:
    """A headless Service without ports, labelled with the LWS name."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {c.LABEL_SET_NAME: lws_name},
            "ownerReferences": [dict(owner_reference)],
        },
        "spec": {
            "clusterIP": _HEADLESS,
            "selector": dict(selector),
            "publishNotReadyAddresses": True,
        },
    }


def uses_shared_service(lws: Obj) -> bool:
    return subdomain_policy(lws.get("spec") or {}) == c.SUBDOMAIN_SHARED


def shared_service(lws: Obj) -> dict[str, Any] | None:
    """The set-wide Service the LWS controller ensures, or None under UniquePerReplica."""
    if not uses_shared_service(lws):
        return None
    lws_name = name_of(lws)
    return headless_service(
        name=shared_service_name(lws_name),
        namespace=namespace_of(lws),
        lws_name=lws_name,
        selector={c.LABEL_SET_NAME: lws_name},
        owner_reference=lws_owner_reference(lws),
    )


def replica_service(lws: Obj, leader_pod: Obj) -> dict[str, Any] | None:
    """The per-group Service the pod controller ensures for a leader, or None when Shared.

    The decision reads the *live* subdomain policy, not the leader's revision.
    """
    if uses_shared_service(lws):
        return None
    lws_name = name_of(lws)
    return headless_service(
        name=replica_service_name(leader_pod),
        namespace=namespace_of(lws),
        lws_name=lws_name,
        selector={
            c.LABEL_SET_NAME: lws_name,
            c.LABEL_GROUP_INDEX: labels_of(leader_pod).get(c.LABEL_GROUP_INDEX, ""),
        },
        owner_reference=pod_owner_reference(leader_pod),
    )
