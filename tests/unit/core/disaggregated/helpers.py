"""Child LWS dicts as the cache hands them to core/disaggregated (apiserver shape)."""

from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated.naming import child_labels, child_lws_name

DS_UID = "ds-uid"
NS = "default"


def child(
    role: str,
    *,
    revision: str = "aaaaaaaa",
    slice_index: int = 0,
    spec: int | None = 1,
    status: int = 0,
    ready: int = 0,
    updated: int = 0,
    initial: str | None = None,
    ds: str = "test-ds",
    owner_uid: str = DS_UID,
    deleting: bool = False,
) -> dict[str, Any]:
    name = child_lws_name(ds, slice_index, revision, role)
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": f"{name}-uid",
        "labels": child_labels(ds, slice_index, revision, role),
        "ownerReferences": [
            {
                "apiVersion": c.DS_API_VERSION,
                "kind": c.DS_KIND,
                "name": ds,
                "uid": owner_uid,
                "controller": True,
            }
        ],
    }
    if initial is not None:
        meta["annotations"] = {c.ANNOTATION_DS_INITIAL_REPLICAS: initial}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    lws_spec: dict[str, Any] = {} if spec is None else {"replicas": spec}
    lws_status = {
        k: v for k, v in (("replicas", status), ("readyReplicas", ready), ("updatedReplicas", updated)) if v
    }
    return {
        "apiVersion": c.LWS_API_VERSION,
        "kind": c.LWS_KIND,
        "metadata": meta,
        "spec": lws_spec,
        "status": lws_status,
    }
