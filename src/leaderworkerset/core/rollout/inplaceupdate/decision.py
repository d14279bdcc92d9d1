"""In-place updates, one round decided: what the shell gathered (`InPlaceInputs`, a plain snapshot)
in, the whole plan out (`decide_in_place_round`: hold, keep, settle, advance, whether the set waits
on its pods, the path to announce) and, per group the plan advances, its writes in order
(`group_writes`).

A group's writes are decided after the rolling-update step: the leader's revision labels name the
leader StatefulSet's update revision, which its controller computes from the template that step
applies. Every write is idempotent, computed against the observed object: a round that finds it
applied sends nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.naming import leader_pod_name
from leaderworkerset.core.groups.state import is_leader_pod, pod_ready
from leaderworkerset.core.objects import (
    Obj,
    labels_of,
    lws_replicas,
    name_of,
    revision_key_of,
    statefulset_partition,
)
from leaderworkerset.core.rollout.control import rollout_control
from leaderworkerset.core.rollout.inplaceupdate import patches, planning
from leaderworkerset.core.rollout.inplaceupdate.classification import (
    Classification,
    for_group,
    updated_in_place_message,
)
from leaderworkerset.core.rollout.partition import rollout_budget


@dataclass(frozen=True)
class InPlaceInputs:
    """What one round of an in-place update reads, gathered once: the freshest copies (the caches
    overlaid with this process's writes the watch has not delivered), and the set's revisions."""

    lws: Obj
    revision_key: str
    new_spec: Obj  # the revision spec of `revision_key`
    leader_sts: Obj  # as cached before the rolling-update step
    pods: Mapping[str, Obj]  # the set's pods by name, none being deleted
    statefulsets: Mapping[str, Obj]  # the set's StatefulSets by name
    # By a leader's revision key: that revision's spec, and how it changes into the new one (a key
    # whose revision is not known yet has neither: its group takes the normal rollout).
    old_specs: Mapping[str, Obj] = field(default_factory=dict)
    classifications: Mapping[str, Classification] = field(default_factory=dict)


@dataclass(frozen=True)
class InPlaceGroup:
    """One group as the round sees it: where it stands, and its pods."""

    state: planning.GroupInPlace
    leader: Obj
    workers: tuple[Obj, ...]


class Target(enum.Enum):
    """Where a write goes; the shell maps each to its request."""

    POD = "pod"  # strategic-merge patch of the pod
    POD_RESIZE = "pod resize"  # strategic-merge patch of the pod's resize subresource
    POD_SETTLE = "pod settle"  # merge patch of the pod's annotations
    WORKER_TEMPLATE = "worker template"  # strategic-merge patch of a worker StatefulSet
    WORKER_PARTITION = "worker partition"  # merge patch of a worker StatefulSet's partition


@dataclass(frozen=True)
class Write:
    target: Target
    name: str
    patch: Mapping[str, Any]


@dataclass(frozen=True)
class InPlaceRoundPlan:
    hold: bool  # the leader StatefulSet's partition stays at its replicas
    keep: bool  # ... or at least is not lowered this round
    advance: tuple[int, ...]  # the groups moved on this round (`group_writes`), in order
    settle: tuple[Write, ...]  # the pods of groups settled on the new revision
    waiting: bool  # the update waits on the set's pods: their events wake the set
    groups: tuple[InPlaceGroup, ...] = ()
    # The classification of the first group left to the normal rollout (the event that names the
    # path when a change cannot go in place), None when every group goes in place.
    needs_new_pods: Classification | None = None


@dataclass(frozen=True)
class GroupWrites:
    writes: tuple[Write, ...]
    # The message of the event saying the group was updated in place; None: it is not done yet.
    updated: str | None = None


def leaders_done(leader_sts: Obj, leaders: Sequence[Obj], revision_key: str) -> bool:
    """Every group is on the set's revision, and the leader StatefulSet's controller counts the
    leaders labelled: with no pod still pending (`IN_PLACE_RESTARTS_PENDING`, which the shell asks
    of its cache only then), the caches show every write of ours that moved a group (the leader's
    comes last), the update is finished and the rollout may release the partition."""
    return all(revision_key_of(leader) == revision_key for leader in leaders) and leaders_counted(
        leader_sts, leaders
    )


def leaders_counted(leader_sts: Obj, leaders: Iterable[Obj]) -> bool:
    """The leader StatefulSet's controller counts every leader labelled with its update revision."""
    return planning.statefulset_counts_labelled(
        leader_sts, planning.labelled_at_update_revision(leader_sts, leaders)
    )


def observe_group(inputs: InPlaceInputs, index: int) -> InPlaceGroup | None:
    """Where group `index` stands (None: its leader is being created, on the revision it is given)."""
    pods = inputs.pods
    leader = pods.get(leader_pod_name(name_of(inputs.lws), index))
    if leader is None:
        return None
    workers = tuple(
        p for p in pods.values() if labels_of(p).get(c.LABEL_GROUP_INDEX) == str(index) and p is not leader
    )
    group = [leader, *workers]
    classification = inputs.classifications.get(revision_key_of(leader))
    if classification is not None:
        classification = for_group(classification, group)
    progress = planning.group_progress(
        leader, workers, inputs.statefulsets.get(name_of(leader)), inputs.revision_key, classification
    )
    available = all(pod_ready(p) for p in group)
    if progress is planning.GroupProgress.DONE:
        available = available and all(patches.pod_settled(p) for p in group)
    return InPlaceGroup(planning.GroupInPlace(index, progress, available, classification), leader, workers)


def settle_writes(group: InPlaceGroup) -> list[Write]:
    """A group done and settled on its new images: its pods' restarts count as failures again."""
    state = group.state
    if state.progress is not planning.GroupProgress.DONE or not state.available:
        return []
    return [
        Write(Target.POD_SETTLE, name_of(pod), patch)
        for pod in (group.leader, *group.workers)
        if (patch := patches.settle_patch(pod)) is not None
    ]


def waits_on_pods(plan: planning.InPlacePlan, groups: Iterable[planning.GroupInPlace]) -> bool:
    """The update waits on the set's pods (a restart on a new image, Ready again, a resize applied):
    no StatefulSet status reliably tells, so their events must wake the set. Groups left to the
    rollout wake it as a rollout does."""
    return plan.hold or any(
        not g.available and g.progress is not planning.GroupProgress.RECREATE for g in groups
    )


def decide_in_place_round(inputs: InPlaceInputs) -> InPlaceRoundPlan:
    """The round's plan: which groups move (`planning.plan_groups`), whether the leader StatefulSet's
    partition is held or kept, and which settled pods are released from the update's allowance."""
    lws = inputs.lws
    groups = [g for index in range(lws_replicas(lws)) if (g := observe_group(inputs, index)) is not None]
    states = [g.state for g in groups]
    leaders = [p for p in inputs.pods.values() if is_leader_pod(p)]
    plan = planning.plan_groups(
        states,
        max_unavailable=rollout_budget(lws).unavailable,
        halted=rollout_control(lws).paused or planning.halted(lws),
        leaders_counted=leaders_counted(inputs.leader_sts, leaders),
    )
    recreated = next((s for s in states if s.progress is planning.GroupProgress.RECREATE), None)
    return InPlaceRoundPlan(
        hold=plan.hold,
        keep=plan.keep,
        advance=plan.advance,
        settle=tuple(write for group in groups for write in settle_writes(group)),
        waiting=waits_on_pods(plan, states),
        groups=tuple(groups),
        needs_new_pods=None if recreated is None else recreated.classification,
    )


def group_writes(
    inputs: InPlaceInputs, plan: InPlaceRoundPlan, index: int, leader_sts: Obj | None
) -> GroupWrites:
    """One step of group `index`, from what the round observed; `leader_sts`: the freshest leader
    StatefulSet, after the rolling-update step wrote it. The worker StatefulSet goes first, then
    its pods and its partition, and the leader last: its revision label marks the group done."""
    group = next((g for g in plan.groups if g.state.index == index), None)
    if group is None or group.state.classification is None:
        return GroupWrites(())
    old_spec = inputs.old_specs.get(revision_key_of(group.leader))
    if old_spec is None:
        return GroupWrites(())
    new_spec, new_key = inputs.new_spec, inputs.revision_key
    leader_delta = patches.template_delta(
        patches.pod_template(old_spec, c.ROLE_LEADER), patches.pod_template(new_spec, c.ROLE_LEADER)
    )
    writes: list[Write] = []
    worker_sts = inputs.statefulsets.get(name_of(group.leader))
    if worker_sts is not None:
        knock_on = int(patches.restarts_containers(leader_delta, group.leader))
        done = worker_steps(writes, worker_sts, group.workers, old_spec, new_spec, new_key, knock_on)
        if not done:
            return GroupWrites(tuple(writes))
    if leader_sts is None or not statefulset_published(leader_sts, new_key):
        return GroupWrites(tuple(writes))  # the StatefulSet controller has not seen the new template yet
    writes += pod_writes(group.leader, leader_delta, revision_labels(new_key, leader_sts))
    return GroupWrites(tuple(writes), updated_in_place_message(index, group.state.classification))


def worker_steps(
    writes: list[Write],
    worker_sts: Obj,
    workers: Sequence[Obj],
    old_spec: Obj,
    new_spec: Obj,
    new_key: str,
    knock_on: int,
) -> bool:
    """Moves the worker StatefulSet and its pods one step (appending to `writes`); True once they
    are all on `new_key` as its controller sees."""
    old_template = patches.pod_template(old_spec, c.ROLE_WORKER)
    delta = patches.template_delta(old_template, patches.pod_template(new_spec, c.ROLE_WORKER))
    if revision_key_of(worker_sts) != new_key:
        patch = held_worker_statefulset(worker_sts, old_template, delta, new_key)
        writes.append(Write(Target.WORKER_TEMPLATE, name_of(worker_sts), patch))
        return False  # its controller publishes the update revision next: its status wakes us
    if not statefulset_published(worker_sts, new_key):
        return False
    labels = revision_labels(new_key, worker_sts)
    for pod in workers:
        writes += pod_writes(pod, delta, labels, knock_on)
    if statefulset_partition(worker_sts):
        if not planning.statefulset_counts_labelled(worker_sts, len(workers)):
            return False  # its controller has not seen our labels yet: its status wakes us
        # Every pod is at the update revision, as its controller sees: releasing the partition
        # recreates none.
        release = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}
        writes.append(Write(Target.WORKER_PARTITION, name_of(worker_sts), release))
    return True


def pod_writes(
    pod: Obj, delta: patches.TemplateDelta, labels: Mapping[str, str], knock_on: int = 0
) -> list[Write]:
    """The pod's resize (before the revision labels, which mark the pod updated), then its patch."""
    writes = []
    resize = patches.resize_patch(pod, delta)
    if resize is not None:
        writes.append(Write(Target.POD_RESIZE, name_of(pod), resize))
    patch = patches.pod_patch(pod, delta, labels, knock_on=knock_on)
    if patch is not None:
        writes.append(Write(Target.POD, name_of(pod), patch))
    return writes


def statefulset_published(sts: Obj, key: str) -> bool:
    """The StatefulSet carries `key` and its controller has computed the update revision of it."""
    status, meta = sts.get("status") or {}, sts.get("metadata") or {}
    template_key = labels_of(((sts.get("spec") or {}).get("template")) or {}).get(
        c.LABEL_TEMPLATE_REVISION_HASH
    )
    return (
        template_key == key
        and int(status.get("observedGeneration") or 0) >= int(meta.get("generation") or 0)
        and bool(status.get("updateRevision"))
    )


def revision_labels(key: str, sts: Obj) -> dict[str, str]:
    return {
        c.LABEL_TEMPLATE_REVISION_HASH: key,
        planning.CONTROLLER_REVISION_HASH: str((sts.get("status") or {}).get("updateRevision")),
    }


def held_worker_statefulset(
    sts: Obj, old_template: Obj, delta: patches.TemplateDelta, key: str
) -> dict[str, Any]:
    """The strategic-merge patch that puts the worker StatefulSet on the new template, its partition
    holding every pod where it is. It names only what the delta changes, so it needs no full
    template: the cache holds none, and nothing else writes these fields of a worker StatefulSet."""
    revision = {c.LABEL_TEMPLATE_REVISION_HASH: key}
    strategy = {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": int((sts.get("spec") or {}).get("replicas") or 0)},
    }
    return {
        "metadata": {"labels": revision},
        "spec": {
            "template": patches.template_patch(old_template, delta, revision),
            "updateStrategy": strategy,
        },
    }
