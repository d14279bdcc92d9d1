"""Whether surge groups fit on the nodes: the capacity side of capacity-aware surge (the decision is
`core/rollout/surgefallback/`).

One computation for the controller (may it surge again?) and `lws plan` (which path will the
rollout take?): the accelerators each pod of a group requests, placed pod by pod on the free
accelerators of the nodes the templates select (`accelerators.group_fits`). It lives on the
scheduling floor, beside that arithmetic, because the rollout floor (where the decision is) is below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.objects import Obj
from leaderworkerset.core.rollout.partition import RolloutBudget
from leaderworkerset.core.rollout.surgefallback.decision import (
    SurgeCapacity,
    describe,
    fallback_seconds,
    fallback_since,
)
from leaderworkerset.core.scheduling.accelerators import (
    Accelerators,
    group_accelerators,
    group_fits,
    group_pod_accelerators,
    total_free,
)


def surge_capacity(lws: Obj, by_node: Mapping[str, Accelerators], groups: int = 1) -> SurgeCapacity | None:
    """Whether `groups` groups of `lws` fit on the nodes now; None when its groups request no
    accelerators (free accelerators cannot tell whether such a group fits)."""
    pods = group_pod_accelerators(lws)
    if not any(count for pod in pods for count in pod.values()):
        return None
    needs = {name: count * groups for name, count in group_accelerators(lws).items()}
    return SurgeCapacity(group_fits(by_node, pods * groups), needs, total_free(by_node))


@dataclass(frozen=True)
class SurgePath:
    """Which way a rolling update with surge goes on this cluster, and why."""

    without_surge: bool
    note: str | None = None
    warning: str | None = None


def surge_path(
    live: Obj,
    proposed: Obj,
    budget: RolloutBudget,
    free_by_node: Mapping[str, Accelerators] | None,
    *,
    group: Obj | None = None,
    role: str = "",
) -> SurgePath:
    """Surge, or groups replaced without surge: the latter when the controller already gave the surge
    back, or when the surge groups do not fit on the eligible nodes and the set opted in. `live`
    and `proposed` are the set (LWS or DS: the annotations); `group` what one group is made of (an
    LWS, or a DS role as an LWS; default `proposed`), named `role` in the messages."""
    if budget.surge == 0:
        return SurgePath(False)
    seconds = fallback_seconds(proposed)
    since = fallback_since(live)
    group = proposed if group is None else group
    of = f"role {role}: " if role else ""
    step = max(budget.unavailable, 1)
    replaced = f"groups are replaced in place, {step} at a time"
    if seconds is not None and since is not None:
        return SurgePath(
            True, f"surge path: given back since {since.isoformat()}; {replaced} until capacity returns"
        )
    capacity = None if free_by_node is None else surge_capacity(group, free_by_node, budget.surge)
    if capacity is None:
        return SurgePath(False)
    needs, free = describe(capacity.needs), describe(capacity.free)
    if capacity.fits:
        return SurgePath(
            False, f"surge path: {of}the {budget.surge} surge group(s) fit ({needs} of {free} free)"
        )
    why = (
        f"{of}the {budget.surge} surge group(s) do not fit on the eligible nodes "
        f"({needs} needed, {free} free)"
    )
    if seconds is None:
        warning = (
            f"{why}: the rollout waits for capacity before replacing any group; "
            f"{ext.ANNOTATION_SURGE_FALLBACK_SECONDS} would replace them in place instead"
        )
        return SurgePath(False, warning=warning)
    return SurgePath(
        True, f"in-place path: {why}; after {seconds}s unschedulable the surge is given back and {replaced}"
    )
