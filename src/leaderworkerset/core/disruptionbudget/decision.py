"""Which groups a drain may take now: the decision behind the per-group PodDisruptionBudgets.

Each group of a set with a disruption budget has a PodDisruptionBudget of its own that selects its
pods. It is *locked* (minAvailable = the group size: a healthy pod can not be evicted) unless the
controller *released* it (minAvailable 0: every pod of the group can be). A PodDisruptionBudget
counts pods, but one evicted pod takes its whole group down, so the controller hands out groups:

* a group *wants* release when one of its live pods sits on a cordoned node (`kubectl drain` and
  `kubectl cordon` set `spec.unschedulable`);
* a group is *down* when it is released, not Ready, or missing (fewer groups than spec.replicas);
* a wanting group that is already not Ready costs nothing more and is released at once (a failing
  group never holds up a drain); a Ready one only while fewer than the budget's groups are down;
* a released group is locked again once it has been Ready with no pod on a cordoned node for
  `SETTLE_SECONDS`: its replacement is up elsewhere (or the node was uncordoned), and the next group
  may go.

* a Hash set with surge (`core/disruptionbudget/drainsurge.py`) replaces a Ready wanting group first: the
  group is *surged* (its leader marked, the Deployment makes one more group), and its budget is
  released only once the set has spec.replicas Ready groups besides the surged ones; with no surge
  (maxSurge 0, a rollout under way, Ordinal) groups are released under the budget as above.

* a waiting group records the names of its pods on cordoned nodes; once those pods are no longer on
  a cordoned node (replaced elsewhere by a rollout or a recreation, or the node was uncordoned) it is
  *owed* one release, because a drain retries a refused eviction by name (see `SETTLE_SECONDS`).

The order is the group's: lowest index (or key) first, so rounds that read the same state agree.
Pure: the controller (controllers/disruptionbudget/) reads pods, nodes and budgets from its caches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.disruptionbudget.annotation import budget_groups
from leaderworkerset.core.disruptionbudget.drainsurge import is_drain_surged, surge_allowance
from leaderworkerset.core.groups.state import is_leader_pod, pod_ready, ready_since
from leaderworkerset.core.objects import (
    Obj,
    annotations_of,
    is_deleting,
    is_hash,
    labels_of,
    lws_owner_reference,
    lws_size,
    name_of,
    namespace_of,
)

PDB_API_VERSION = "policy/v1"
# How long a released group stays released once it is Ready again off cordoned nodes. `kubectl drain`
# retries a refused eviction every 5 s *by pod name*, refreshing the pod by name: when a group's
# recreation replaced a pod it was waiting on, it is the replacement (same name, a healthy node)
# that it evicts next. Locked at once, that eviction would be refused for ever and the drain would
# hang; released for two retry periods, the retry goes through (or finds the name gone) and the
# drain ends. The replacement group may be recreated once more meanwhile, while it counts as down.
SETTLE_SECONDS = 10.0
PDB_KIND = "PodDisruptionBudget"


@dataclass(frozen=True)
class GroupDisruptionView:
    """One group as the decision sees it."""

    group: str  # the group index (Ordinal) or group key (Hash): what its budget selects
    ready: bool
    on_cordoned_node: bool
    released: bool
    present: bool = True  # has a live pod
    ready_for: float | None = None  # seconds since its last pod turned Ready (None: not Ready, unknown)
    cordoned_pods: frozenset[str] = frozenset()  # names of its live pods on cordoned nodes
    pending: frozenset[str] = frozenset()  # pod names a drain was refused on (see `owed`)
    leader: str | None = None  # its live leader pod's name
    surged: bool = False  # being replaced through the surge ahead of a drain (its leader is marked)

    @property
    def owed(self) -> bool:
        """A drain was refused on some of its pods while it waited, and they have since been replaced
        elsewhere under the same names (a rollout, a recreation): the drain now retries those names
        on the healthy replacements, and only a release lets it finish."""
        return bool(self.pending) and not self.on_cordoned_node


@dataclass(frozen=True)
class DisruptionBudgetDecision:
    released: tuple[str, ...]  # the groups whose budget lets a drain evict them after this round
    newly_released: tuple[str, ...]
    newly_locked: tuple[str, ...]
    waiting: tuple[str, ...]  # want release, held back by the budget
    down: int  # groups down once the new releases are made (released, not Ready or missing)
    recheck_after: float | None = None  # when a released group's settling ends
    newly_surged: tuple[str, ...] = ()  # groups to mark: their replacement is made first
    unsurged: tuple[str, ...] = ()  # marked groups no longer on a cordoned node: mark removed


def _order(group: str) -> tuple[int, str]:
    return (int(group), "") if group.isdigit() else (1 << 62, group)


def _settled(view: GroupDisruptionView, settle_seconds: float) -> bool:
    return view.ready_for is None or view.ready_for >= settle_seconds


def decide_releases(
    groups: Sequence[GroupDisruptionView],
    *,
    budget: int,
    replicas: int,
    surge: int = 0,
    settle_seconds: float = SETTLE_SECONDS,
) -> DisruptionBudgetDecision:
    """Release and lock groups so a drain takes at most `budget` groups down at once; with `surge`
    groups to spare (Hash), a Ready group goes only once its replacement is Ready (see module)."""
    ordered = sorted(groups, key=lambda g: _order(g.group))
    back = [g for g in ordered if g.released and g.ready and not g.on_cordoned_node]
    locking = [g.group for g in back if _settled(g, settle_seconds)]
    settling = [settle_seconds - (g.ready_for or 0.0) for g in back if not _settled(g, settle_seconds)]
    keep = [g.group for g in ordered if g.released and g.group not in locking]
    down = len(keep) + sum(1 for g in ordered if not g.released and not g.ready)
    down += max(0, replicas - len(ordered))
    wanting = [g for g in ordered if not g.released and (g.on_cordoned_node or g.owed)]
    releasing = [g.group for g in wanting if not g.ready]  # already counted as down
    unsurged = tuple(g.group for g in ordered if g.surged and not g.released and not g.on_cordoned_node)
    surged = sum(1 for g in ordered if g.surged and g.group not in unsurged)
    # The surged groups' replacements are up once the others alone make spec.replicas Ready groups.
    replaced = sum(1 for g in ordered if g.ready and not g.surged) >= replicas
    waiting: list[str] = []
    surging: list[str] = []
    for view in (g for g in wanting if g.ready):
        if surge > 0 and not view.surged and surged < surge:
            surging.append(view.group)
            surged += 1
        elif down < budget and ((view.surged and replaced) or (surge == 0 and not view.surged)):
            releasing.append(view.group)
            down += 1
        else:
            waiting.append(view.group)
    released = tuple(sorted([*keep, *releasing], key=_order))
    recheck = min(settling, default=None)
    return DisruptionBudgetDecision(
        released, tuple(releasing), tuple(locking), tuple(waiting), down, recheck, tuple(surging), unsurged
    )


def group_label(lws: Obj) -> str:
    """The label that names a group: its index, or its key for a Hash set (a replaced Hash group
    comes back under a new key, so an index would select two groups in turn)."""
    return c.LABEL_GROUP_KEY if is_hash(lws) else c.LABEL_GROUP_INDEX


def observe_groups(
    lws: Obj,
    pods: Iterable[Obj],
    cordoned: frozenset[str],
    budgets: Mapping[str, Obj],
    now: datetime | None = None,
) -> list[GroupDisruptionView]:
    """The set's groups from its pods (terminating ones excluded: they are going anyway) and from
    the budgets that exist (group -> its PodDisruptionBudget). A group is Ready when its leader lives
    and all `size` of its pods are Ready; `now` gives how long it has been (since its last pod)."""
    label, size = group_label(lws), lws_size(lws)
    members: dict[str, list[Obj]] = {group: [] for group in budgets}
    for pod in pods:
        group = labels_of(pod).get(label)
        if group is not None and not is_deleting(pod):
            members.setdefault(group, []).append(pod)
    views = []
    for group, live in members.items():
        ready = any(is_leader_pod(p) for p in live) and sum(1 for p in live if pod_ready(p)) >= size
        on_cordoned = frozenset(name_of(p) for p in live if (p.get("spec") or {}).get("nodeName") in cordoned)
        pdb = budgets.get(group)
        leader = next((p for p in live if is_leader_pod(p)), None)
        views.append(
            GroupDisruptionView(
                group,
                ready,
                bool(on_cordoned),
                pdb is not None and is_released(pdb),
                bool(live),
                _ready_for(live, now) if ready else None,
                on_cordoned,
                pending_pods(pdb) if pdb is not None else frozenset(),
                None if leader is None else name_of(leader),
                leader is not None and is_drain_surged(leader),
            )
        )
    return views


def _ready_for(pods: Sequence[Obj], now: datetime | None) -> float | None:
    times = [ready_since(p) for p in pods]
    if now is None or any(t is None for t in times):
        return None
    return max(0.0, min((now - t).total_seconds() for t in times if t is not None))


def budget_name(lws: Obj, group: str) -> str:
    return f"{name_of(lws)}-group-{group}"


def is_released(pdb: Obj) -> bool:
    return (pdb.get("spec") or {}).get("minAvailable") == 0


def pending_pods(pdb: Obj) -> frozenset[str]:
    value = annotations_of(pdb).get(ext.ANNOTATION_DRAIN_PENDING_PODS) or ""
    return frozenset(name for name in value.split(",") if name)


def group_pdb(lws: Obj, group: str, *, released: bool, pending: Iterable[str] = ()) -> dict[str, Any]:
    """The PodDisruptionBudget of one group, as the controller applies it.

    minAvailable is an integer on purpose: with maxUnavailable (or a percentage) the disruption
    controller scales by the pods' owners, and a leader's owner is the whole set's StatefulSet.
    `AlwaysAllow` lets a pod that is not Ready go even while locked: an already failing group
    never blocks a drain.
    """
    label, name = group_label(lws), name_of(lws)
    return {
        "apiVersion": PDB_API_VERSION,
        "kind": PDB_KIND,
        "metadata": {
            "name": budget_name(lws, group),
            "namespace": namespace_of(lws),
            "labels": {c.LABEL_SET_NAME: name, label: group, ext.LABEL_GROUP_DISRUPTION_BUDGET: "true"},
            "ownerReferences": [lws_owner_reference(lws)],
            **(
                {"annotations": {ext.ANNOTATION_DRAIN_PENDING_PODS: ",".join(sorted(pending))}}
                if pending
                else {}
            ),
        },
        "spec": {
            "minAvailable": 0 if released else lws_size(lws),
            "selector": {"matchLabels": {c.LABEL_SET_NAME: name, label: group}},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }


def wanted(lws: Obj, view: GroupDisruptionView, replicas: int) -> bool:
    """Whether a group keeps a budget: a Hash group while it has pods, an Ordinal one while its
    index is below spec.replicas (a group being recreated keeps its budget through the gap)."""
    if is_hash(lws):
        return view.present
    return view.group.isdigit() and int(view.group) < replicas


@dataclass(frozen=True)
class GroupBudget:
    released: bool
    pending: frozenset[str] = frozenset()


@dataclass(frozen=True)
class BudgetPlan:
    """One round: every budget to apply (group -> its state) and the groups whose budget goes."""

    decision: DisruptionBudgetDecision
    apply: dict[str, GroupBudget]
    delete: tuple[str, ...]


def plan_budgets(
    lws: Obj, views: Sequence[GroupDisruptionView], *, budget: int, replicas: int, surge: int = 0
) -> BudgetPlan:
    kept = [v for v in views if wanted(lws, v, replicas)]
    gone = tuple(sorted((v.group for v in views if not wanted(lws, v, replicas)), key=_order))
    decision = decide_releases(kept, budget=budget, replicas=replicas, surge=surge)
    released = set(decision.released)
    apply = {v.group: GroupBudget(v.group in released, _pending(v, decision)) for v in kept}
    return BudgetPlan(decision, apply, gone)


def _pending(view: GroupDisruptionView, decision: DisruptionBudgetDecision) -> frozenset[str]:
    """The pod names a drain may be retrying on this group: kept until the group, released, is
    locked again (the drain got through); a waiting group adds the names on cordoned nodes now."""
    if view.group in decision.newly_locked:
        return frozenset()
    if view.group in decision.released:
        return view.pending
    return view.pending | view.cordoned_pods


def group_of_pdb(lws: Obj, pdb: Obj) -> str | None:
    return labels_of(pdb).get(group_label(lws))


def budget_notes(
    lws: Obj,
    pods: Iterable[Obj],
    cordoned: frozenset[str],
    budgets: Iterable[Obj],
    deployment: Obj | None = None,
) -> list[str]:
    """What `lws status` says of a set's disruption budget: the budget, the groups a drain may take
    now (their budget released) and the ones on cordoned nodes waiting their turn. Nothing for a set
    without a (valid) budget: its condition names a bad value."""
    groups = budget_groups(lws)
    if groups is None:
        return []
    pods = list(pods)
    by_group: dict[str, Obj] = {}
    for pdb in budgets:
        group = group_of_pdb(lws, pdb)
        if group is not None:
            by_group[group] = pdb
    views = sorted(observe_groups(lws, pods, cordoned, by_group), key=lambda v: _order(v.group))
    unit = "group" if groups == 1 else "groups"
    notes = [f"disruption budget: {groups} {unit} at a time, {len(by_group)} group budgets"]
    if out := [_short(v.group) for v in views if v.released]:
        notes.append(f"released for a drain: group {', '.join(out)}")
    if surged := [_short(v.group) for v in views if v.surged]:
        notes.append(f"replaced first for a drain (surge): group {', '.join(surged)}")
    waits = [v for v in views if (v.on_cordoned_node or v.owed) and not v.released and not v.surged]
    if waiting := [_short(v.group) for v in waits]:
        notes.append(f"on cordoned nodes, waiting for the budget: group {', '.join(waiting)}")
    if is_hash(lws):
        notes.append(drain_replacement_note(*surge_allowance(lws, pods, deployment)))
    return notes


def drain_replacement_note(surge: int, why: str) -> str:
    """How a Hash set's groups leave a cordoned node (`lws status`, events)."""
    if surge > 0:
        unit = "group" if surge == 1 else "groups"
        return f"drain replacement: surge first, {surge} {unit} at a time (maxSurge)"
    return f"drain replacement: none ({why}), groups are released under the budget"


def _short(group: str) -> str:
    """A Hash group's key as the group tree names it (its first 8 characters)."""
    return group if group.isdigit() else group[:8]
