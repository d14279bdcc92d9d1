"""DisaggregatedSetRoleScalers: one per External role, owned by the DS.

A scaler is the `/scale` target of an autoscaler: its `spec.replicas` is the role's desired total,
its `status.replicas` the observed groups of the role over every slice and revision, and its
`status.selector` the role's leader pods, so that HPA averages one pod per group.

A scaler left by a deleted DisaggregatedSet of the same name (its controller reference names this DS
with another UID) is adopted, not refused: until the garbage collector removes it, it is the object
`<ds>-<role>` that `kubectl scale` and autoscalers find and write, so refusing it would pause the set
and then drop that write when the collector deletes it and a fresh scaler is seeded.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.conditions import format_time
from leaderworkerset.core.disaggregated.children import is_external, status_count
from leaderworkerset.core.disaggregated.naming import role_of, scaler_name, scaler_selector
from leaderworkerset.core.objects import (
    Obj,
    controller_owner,
    controller_reference,
    is_controlled_by,
    labels_of,
    lws_replicas,
    metadata,
    name_of,
    uid_of,
)

# Seed of a scaler for a role with no child yet: HPA cannot scale from a current count of 0
# unless HPAScaleToZero is on, so a fresh role starts at 1.
FRESH_ROLE_SEED = 1


def external_roles(ds: Obj) -> list[str]:
    return [str(role.get("name")) for role in (ds.get("spec") or {}).get("roles") or [] if is_external(role)]


def seed_replicas(role: str, children: Iterable[Obj]) -> int:
    """The current total of a role (Σ spec.replicas over its children, nil → 1), so that a
    Static→External switch keeps the running fleet; FRESH_ROLE_SEED when the role has no child."""
    mine = [lws for lws in children if role_of(lws) == role]
    if not mine:
        return FRESH_ROLE_SEED
    return sum(lws_replicas(lws) for lws in mine)


def is_left_by_earlier_set(scaler: Obj, ds: Obj) -> bool:
    """Controlled by a DisaggregatedSet of this name with another UID: one namespace holds a single
    DS of a name, so that owner was deleted and the scaler only waits for the garbage collector."""
    owner = controller_owner(scaler)
    return (
        owner is not None
        and owner.get("kind") == c.DS_KIND
        and str(owner.get("apiVersion") or "").split("/")[0] == c.DS_GROUP
        and owner.get("name") == name_of(ds)
        and owner.get("uid") != uid_of(ds)
    )


@dataclass(frozen=True)
class ScalerPlan:
    bound: dict[str, Obj] = field(default_factory=dict)  # role -> controlled scaler kept
    delete: tuple[Obj, ...] = ()  # controlled scalers whose role is no longer External
    create: tuple[tuple[str, int], ...] = ()  # (role, seed) of missing scalers
    adopt: tuple[tuple[str, Obj], ...] = ()  # (role, scaler left by a deleted DS of this name)


def plan_scalers(ds: Obj, scalers: Iterable[Obj], children: Sequence[Obj]) -> ScalerPlan:
    """What `ScalerManager.Reconcile` does, as data. `scalers` are those labelled with the DS name;
    ones controlled by someone else are never touched, except that a wanted role's scaler left by a
    deleted DS of this name is adopted (its `spec.replicas` kept) instead of being created anew."""
    wanted = external_roles(ds)
    name = name_of(ds)
    bound: dict[str, Obj] = {}
    delete: list[Obj] = []
    adopt: dict[str, Obj] = {}
    for scaler in scalers:
        role = labels_of(scaler).get(c.LABEL_DS_ROLE, "")
        if not is_controlled_by(scaler, ds):
            if (
                role in wanted
                and name_of(scaler) == scaler_name(name, role)
                and is_left_by_earlier_set(scaler, ds)
            ):
                adopt[role] = scaler
        elif role in wanted:
            bound[role] = scaler
        else:
            delete.append(scaler)
    create = tuple(
        (role, seed_replicas(role, children)) for role in wanted if role not in bound and role not in adopt
    )
    adopted = tuple((role, scaler) for role, scaler in adopt.items() if role not in bound)
    return ScalerPlan(bound=bound, delete=tuple(delete), create=create, adopt=adopted)


def adoption_patch(ds: Obj, role: str, scaler: Obj) -> dict[str, Any]:
    """The merge patch that makes this DS the controller of a scaler left by a deleted DS of its name:
    the dead controller reference is replaced, other owners and `spec` are kept, and the resource
    version is a precondition (a write in between makes the patch conflict and the next round retry)."""
    meta = metadata(scaler)
    others = [ref for ref in meta.get("ownerReferences") or [] if ref.get("controller") is not True]
    mine = controller_reference(ds, c.DS_API_VERSION, c.DS_KIND)
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "labels": {c.LABEL_DS_NAME: name_of(ds), c.LABEL_DS_ROLE: role},
            "ownerReferences": [*others, mine],
        }
    }


def build_scaler(ds: Obj, role: str, seed: int) -> dict[str, Any]:
    meta = metadata(ds)
    ds_name = str(meta.get("name"))
    return {
        "apiVersion": c.DS_API_VERSION,
        "kind": c.DSRS_KIND,
        "metadata": {
            "name": scaler_name(ds_name, role),
            "namespace": meta.get("namespace"),
            "labels": {c.LABEL_DS_NAME: ds_name, c.LABEL_DS_ROLE: role},
            "ownerReferences": [controller_reference(ds, c.DS_API_VERSION, c.DS_KIND)],
        },
        "spec": {"replicas": seed},
    }


def observed_replicas(role: str, children: Iterable[Obj]) -> int:
    """The scaler's replicas: Σ status.replicas of the role's children over every slice and revision."""
    return sum(status_count(lws, "replicas") for lws in children if role_of(lws) == role)


def scaler_status(
    ds_name: str, role: str, scaler: Obj, observed: int, now: datetime
) -> dict[str, Any] | None:
    """The scaler status to write, or None when the stored one already says it.

    The Ready condition follows meta.SetStatusCondition: lastTransitionTime moves only when the
    status flips; reason, message and observedGeneration are kept current."""
    stored = dict(scaler.get("status") or {})
    generation = int(metadata(scaler).get("generation") or 0)
    ready = {
        "type": c.CONDITION_READY,
        "status": c.CONDITION_TRUE,
        "observedGeneration": generation,
        "reason": c.REASON_BOUND,
        "message": c.MESSAGE_BOUND,
    }
    conditions = [dict(cond) for cond in stored.get("conditions") or []]
    for i, cond in enumerate(conditions):
        if cond.get("type") == c.CONDITION_READY:
            stamp = (
                cond.get("lastTransitionTime") if cond.get("status") == c.CONDITION_TRUE else format_time(now)
            )
            conditions[i] = {**ready, "lastTransitionTime": stamp}
            break
    else:
        conditions.append({**ready, "lastTransitionTime": format_time(now)})
    status = {
        "replicas": observed,
        "selector": scaler_selector(ds_name, role),
        "observedGeneration": generation,
        "conditions": conditions,
    }
    same = (
        int(stored.get("replicas") or 0) == observed
        and stored.get("selector") == status["selector"]
        and int(stored.get("observedGeneration") or 0) == generation
        and (stored.get("conditions") or []) == conditions
    )
    return None if same else status
