"""In-place updates, the plan of a round: the `update-strategy` annotation's rule, where each group
stands (`group_progress`), which groups move now and whether the partition is held (`plan_groups`).
The package docstring says how a group moves without a pod being recreated."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.objects import Obj, annotations_of, is_hash, labels_of, revision_key_of
from leaderworkerset.core.rollout.inplaceupdate.classification import Classification

CONTROLLER_REVISION_HASH = "controller-revision-hash"  # the StatefulSet controller's pod label
STRATEGIES = (ext.UPDATE_STRATEGY_IN_PLACE, ext.UPDATE_STRATEGY_RECREATE)


def update_strategy_problem(value: str, obj: Obj) -> str | None:
    """The rule an `update-strategy` value breaks on this LWS, or None."""
    if value not in STRATEGIES:
        return f"must be one of {', '.join(STRATEGIES)}"
    if value == ext.UPDATE_STRATEGY_IN_PLACE and is_hash(obj):
        return "in-place updates need groupIdentity Ordinal (a Hash set rolls through its Deployment)"
    return None


def wants_in_place_update(lws: Obj) -> bool:
    value = annotations_of(lws).get(ext.ANNOTATION_UPDATE_STRATEGY)
    return value == ext.UPDATE_STRATEGY_IN_PLACE and update_strategy_problem(value, lws) is None


class GroupProgress(enum.Enum):
    DONE = "done"  # the leader carries the new revision
    STARTED = "started"  # workers reached, leader not yet
    PENDING = "pending"  # nothing written yet, in place is possible
    RECREATE = "recreate"  # left to the normal rollout


@dataclass(frozen=True)
class GroupInPlace:
    """One group as the in-place update sees it."""

    index: int
    progress: GroupProgress
    available: bool  # ready, and (when updated) settled on the new images
    classification: Classification | None  # None: the group's revision is unknown


def group_progress(
    leader: Obj,
    workers: Sequence[Obj],
    worker_sts: Obj | None,
    key: str,
    classification: Classification | None,
) -> GroupProgress:
    if revision_key_of(leader) == key:
        return GroupProgress.DONE
    if (worker_sts is not None and revision_key_of(worker_sts) == key) or any(
        revision_key_of(pod) == key for pod in workers
    ):
        return GroupProgress.STARTED
    if classification is not None and classification.in_place:
        return GroupProgress.PENDING
    return GroupProgress.RECREATE


def statefulset_counts_labelled(sts: Obj, labelled: int) -> bool:
    """The StatefulSet controller counts at least `labelled` pods at its update revision: its pod
    cache holds the revision labels we patched on, so lowering the partition below those pods
    replaces none of them. Released on our own writes alone, the partition could reach it first
    (kube-controller-manager watches pods and StatefulSets on separate streams): it would then
    delete a pod it still sees at the old revision, and the group would be recreated."""
    return int((sts.get("status") or {}).get("updatedReplicas") or 0) >= labelled


def labelled_at_update_revision(sts: Obj, pods: Iterable[Obj]) -> int:
    """How many of `pods` carry the StatefulSet's update revision as their controller-revision-hash."""
    update = (sts.get("status") or {}).get("updateRevision")
    return sum(1 for pod in pods if update and labels_of(pod).get(CONTROLLER_REVISION_HASH) == update)


@dataclass(frozen=True)
class InPlacePlan:
    hold: bool  # the leader StatefulSet's partition stays at its replicas
    advance: tuple[int, ...]  # groups to move on this round: started ones, then new starts
    # The partition is not lowered this round (the StatefulSet controller has not counted every
    # leader updated in place yet); unlike `hold` it is not raised either.
    keep: bool = False


def plan_groups(
    groups: Sequence[GroupInPlace], *, max_unavailable: int, halted: bool, leaders_counted: bool
) -> InPlacePlan:
    """Which groups move this round. Started groups always finish (a group is never left half
    updated); new ones start, highest ordinal first like a rollout, while fewer than
    max(maxUnavailable, 1) groups are unavailable, and never while the rollout is halted.
    The partition is held at the replicas while a group waits, and kept where it is until the
    leader StatefulSet's controller counts the leaders updated in place (`leaders_counted`,
    `statefulset_counts_labelled`)."""
    waiting = [g for g in groups if g.progress in (GroupProgress.STARTED, GroupProgress.PENDING)]
    started = [g.index for g in groups if g.progress is GroupProgress.STARTED]
    unavailable = sum(1 for g in groups if not g.available or g.progress is GroupProgress.STARTED)
    room = 0 if halted else max(max_unavailable, 1) - unavailable
    starts: list[int] = []
    for group in sorted(groups, key=lambda g: -g.index):
        if len(starts) >= room:
            break
        if group.progress is GroupProgress.PENDING and group.available:
            starts.append(group.index)
    advance = (*sorted(started, reverse=True), *starts)
    return InPlacePlan(hold=bool(waiting), advance=advance, keep=not leaders_counted)


def halted(lws: Obj) -> bool:
    """Rollout control halted the rollout at its progress deadline: no group starts in place."""
    conditions = (lws.get("status") or {}).get("conditions") or []
    return any(
        cond.get("type") == ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED and cond.get("status") == "True"
        for cond in conditions
    )


def batches(replicas: int, max_unavailable: int) -> list[tuple[int, ...]]:
    """The groups updated in place together, highest ordinal first, when every group gets Ready
    again before the next batch (what `plan_groups` does round after round)."""
    size = max(max_unavailable, 1)
    order = list(range(replicas - 1, -1, -1))
    return [tuple(order[i : i + size]) for i in range(0, len(order), size)]
