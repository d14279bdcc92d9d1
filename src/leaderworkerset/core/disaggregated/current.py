"""Steady state of one slice: no child of another revision exists.

For every spec role the slice must hold the target-revision child at the desired replicas, with
`initial-replicas` equal to the desired count (it follows replica-only and scaler changes while
the revision is current) and the role's groupReplacementPolicy and restartBackoff (the live-synced
fields, no part of the revision).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from leaderworkerset.core.disaggregated.children import group_replacement_policy, initial_replicas
from leaderworkerset.core.disaggregated.naming import child_lws_name, role_of
from leaderworkerset.core.objects import Obj, lws_replicas, metadata, name_of, spec_restart_backoff


@dataclass(frozen=True)
class CreateChild:
    role: str
    replicas: int
    initial: int


@dataclass(frozen=True)
class SetInitialReplicas:
    lws: str
    value: int


@dataclass(frozen=True)
class ScaleChild:
    lws: str
    role: str
    current: int
    replicas: int


@dataclass(frozen=True)
class SyncGroupReplacementPolicy:
    lws: str
    policy: str


@dataclass(frozen=True)
class SyncRestartBackoff:
    lws: str
    restart_backoff: Mapping[str, int] | None  # every member written out; None removes it


ChildAction = CreateChild | SetInitialReplicas | ScaleChild | SyncGroupReplacementPolicy | SyncRestartBackoff


def plan_current_revision(
    ds: Obj, slice_index: int, revision: str, targets: Mapping[str, int], children: Sequence[Obj]
) -> list[ChildAction]:
    """The writes that bring the slice's target-revision children to the spec, in upstream's order
    (per role in spec order: create, or initial-replicas → replicas → groupReplacementPolicy)."""
    ds_name = str(metadata(ds).get("name"))
    by_name = {name_of(lws): lws for lws in children}
    actions: list[ChildAction] = []
    for role in (ds.get("spec") or {}).get("roles") or []:
        role_name = str(role.get("name"))
        desired = targets[role_name]
        existing = by_name.get(child_lws_name(ds_name, slice_index, revision, role_name))
        if existing is None or role_of(existing) != role_name:
            actions.append(CreateChild(role_name, desired, desired))
            continue
        name = name_of(existing)
        if initial_replicas(existing) != desired:
            actions.append(SetInitialReplicas(name, desired))
        current = lws_replicas(existing)
        if current != desired:
            actions.append(ScaleChild(name, role_name, current, desired))
        wanted = group_replacement_policy(role.get("spec") or {})
        if group_replacement_policy(existing.get("spec") or {}) != wanted:
            actions.append(SyncGroupReplacementPolicy(name, wanted))
        # restartBackoff is no part of the revision (the DS's, like the LWS's, hashes v1.0's types):
        # a changed role value reaches its children in place. Compared with defaults filled, as the
        # child's defaulting webhook stores it.
        backoff = spec_restart_backoff(role.get("spec") or {})
        if spec_restart_backoff(existing.get("spec") or {}) != backoff:
            actions.append(SyncRestartBackoff(name, backoff))
    return actions
