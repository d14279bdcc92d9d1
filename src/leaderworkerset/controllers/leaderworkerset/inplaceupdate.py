"""Diff-aware in-place updates (opt-in `update-strategy: InPlaceIfPossible`): the I/O around
`core.rollout.inplaceupdate`.

`prepare` runs before the rolling-update step and decides whether the leader StatefulSet's
partition is held; `advance` runs after it (the leader StatefulSet then carries the new template)
and patches the groups the plan moves. Everything is read from the watch-fed caches (the pod
projections carry images, resources and tolerations for it), overlaid with what this process wrote
that the watch has not delivered yet (`WriteMemo`), so a round right after a write does not act on
the stale copy. Nothing polls: the StatefulSets' and leader pods' events wake the set as always, and
while an update waits the worker pods' events do too (`under_way`, wired in setup.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.events import record
from leaderworkerset.controllers.leaderworkerset.revisions import Revisions
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.controllers.memos import WriteMemo
from leaderworkerset.core.groups.naming import leader_pod_name
from leaderworkerset.core.groups.state import is_leader_pod, pod_ready
from leaderworkerset.core.lifecycle.restart import IN_PLACE_RESTARTS_PENDING
from leaderworkerset.core.objects import (
    ControllerEvent,
    MutableObj,
    Obj,
    annotations_of,
    is_deleting,
    labels_of,
    lws_replicas,
    name_of,
    namespace_of,
    revision_key_of,
    statefulset_partition,
)
from leaderworkerset.core.rollout.control import rollout_control
from leaderworkerset.core.rollout.inplaceupdate import patches, planning
from leaderworkerset.core.rollout.inplaceupdate.classification import (
    Classification,
    classify_template_change,
    for_group,
    needs_new_pods_message,
    updated_in_place_message,
)
from leaderworkerset.core.rollout.partition import rollout_budget
from leaderworkerset.core.rollout.revision import find_revision, revision_spec
from leaderworkerset.runtime.client import STRATEGIC_PATCH, serves_pod_resize
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import PODS, STATEFULSETS

log = structlog.get_logger(__name__)

KNOWN_CLASSIFICATIONS = 1024


@dataclass
class _SetWrites:
    """The pods and StatefulSets of one set this process patched, until the watch delivers them."""

    pods: WriteMemo = field(default_factory=WriteMemo)
    statefulsets: WriteMemo = field(default_factory=WriteMemo)


@dataclass
class InPlaceRound:
    """What `prepare` read for `advance`, within one reconcile."""

    plan: planning.InPlacePlan
    pods: dict[str, MutableObj]
    workers: dict[int, list[MutableObj]]
    statefulsets: dict[str, MutableObj]
    classifications: dict[int, Classification]
    writes: _SetWrites


@dataclass(eq=False)
class InPlaceUpdates(Shell):
    _: KW_ONLY
    revisions: Revisions
    # Classifications by (old key, new key): the revisions behind a key never change.
    _known: dict[tuple[str, str], Classification | None] = field(default_factory=dict)
    # Whether the API server serves pods/resize (InPlacePodVerticalScaling, GA in 1.35), asked once.
    resizes_in_place: bool | None = None
    # (set UID, revision key) whose recreate path was announced: once per rollout, per process.
    _announced: set[tuple[str, str]] = field(default_factory=set)
    # What we wrote of each set under update; dropped once the caches show the update done, so
    # nothing here outlives an update.
    _writes: dict[ObjectKey, _SetWrites] = field(default_factory=dict)
    # The sets whose in-place update waits on their pods (setup.py's pod watch reads it).
    _waiting: set[ObjectKey] = field(default_factory=set)

    def under_way(self, key: ObjectKey) -> bool:
        """An in-place update of the set waits on its pods: a worker's events (a container restarted
        on its new image, Ready again, a resize applied) matter, and no StatefulSet status reliably
        tells (a quick restart may never show in the worker StatefulSet's ready count)."""
        return key in self._waiting

    def forget(self, key: ObjectKey) -> None:
        self._writes.pop(key, None)
        self._waiting.discard(key)

    async def prepare(self, round_: Round) -> InPlaceRound | None:
        lws, key = round_.lws, round_.key
        if not planning.wants_in_place_update(lws) or round_.leader_sts is None or round_.revision is None:
            self.forget(key)
            return None
        leaders = round_.leader_pods(self.informers)
        if (
            all(revision_key_of(p) == round_.revision_key for p in leaders)
            and not self._pending(round_)
            and _counted(round_.leader_sts, leaders)
        ):
            # The caches show every write of ours that moved a group (the leader's comes last), and
            # the StatefulSet controller counts the leaders we labelled: the memories are not needed
            # any more, and the rollout may release the partition.
            self.forget(key)
            return None  # every group is on the set's revision and settled: nothing to do
        if self.resizes_in_place is None:
            self.resizes_in_place = await serves_pod_resize(self.client)
        writes = self._writes.setdefault(key, _SetWrites())
        cached_pods = self.informers.set_pods(key.namespace, key.name)
        pods = {
            name_of(p): p
            for p in _freshest(cached_pods, writes.pods, self.informers.pods.store.resource_version)
            if not is_deleting(p)
        }
        statefulsets = {
            name_of(s): s
            for s in _freshest(
                round_.statefulsets(self.informers),
                writes.statefulsets,
                self.informers.statefulsets.store.resource_version,
            )
        }
        groups, workers, classifications = [], {}, {}
        for index in range(lws_replicas(lws)):
            leader = pods.get(leader_pod_name(key.name, index))
            if leader is None:
                continue  # being created: the StatefulSet makes it on the revision it is given
            members = [
                p
                for p in pods.values()
                if labels_of(p).get(c.LABEL_GROUP_INDEX) == str(index) and p is not leader
            ]
            worker_sts = statefulsets.get(name_of(leader))
            classification = self._classification(round_, revision_key_of(leader))
            if classification is not None:
                classification = for_group(classification, [leader, *members])
            progress = planning.group_progress(
                leader, members, worker_sts, round_.revision_key, classification
            )
            available = all(pod_ready(p) for p in [leader, *members])
            if progress is planning.GroupProgress.DONE:
                available = available and all(patches.pod_settled(p) for p in [leader, *members])
            groups.append(planning.GroupInPlace(index, progress, available, classification))
            if progress is planning.GroupProgress.DONE and available:
                await self._settle([leader, *members], writes.pods)
            workers[index] = members
            if classification is not None:
                classifications[index] = classification
        self._announce_recreate(round_, groups)
        halted = rollout_control(lws).paused or planning.halted(lws)
        counted = _counted(round_.leader_sts, [p for p in pods.values() if is_leader_pod(p)])
        plan = planning.plan_groups(
            groups, max_unavailable=rollout_budget(lws).unavailable, halted=halted, leaders_counted=counted
        )
        log.debug(
            "in-place update",
            revision=round_.revision_key,
            hold=plan.hold,
            advance=list(plan.advance),
            groups=[(g.index, g.progress.value, g.available) for g in groups],
        )
        if plan.hold or any(
            not g.available and g.progress is not planning.GroupProgress.RECREATE for g in groups
        ):
            self._waiting.add(key)
        else:
            self._waiting.discard(key)  # groups left to the rollout wake it as a rollout does
        # No timed requeue: every step waits on an object whose event wakes the set (the StatefulSet
        # controller's revision and status, a leader pod, a worker pod while `under_way`), and the
        # progress deadline of a halted update is rollout control's requeue.
        return InPlaceRound(plan, pods, workers, statefulsets, classifications, writes)

    def _pending(self, round_: Round) -> bool:
        """Some pod of the set still waits for its group to settle (cached annotations suffice)."""
        pending = self.informers.set_pods_where(
            round_.key.namespace,
            round_.key.name,
            lambda p: (
                annotations_of(p).get(ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS) == IN_PLACE_RESTARTS_PENDING
            ),
        )
        return bool(pending)

    async def _settle(self, pods: list[MutableObj], memo: WriteMemo) -> None:
        for pod in pods:
            patch = patches.settle_patch(pod)
            if patch is not None:
                written = await self.client.merge_patch(PODS, namespace_of(pod), name_of(pod), patch)
                memo.remember(ObjectKey(namespace_of(pod), name_of(pod)), written)

    def _announce_recreate(self, round_: Round, groups: list[planning.GroupInPlace]) -> None:
        """The event that names the path when a change cannot go in place."""
        recreated = next((g for g in groups if g.progress is planning.GroupProgress.RECREATE), None)
        memo = (str(round_.lws["metadata"].get("uid")), round_.revision_key)
        if recreated is None or recreated.classification is None or memo in self._announced:
            return
        if len(self._announced) >= KNOWN_CLASSIFICATIONS:
            self._announced.clear()
        self._announced.add(memo)
        message = needs_new_pods_message(recreated.classification)
        event = ControllerEvent(
            c.EVENT_TYPE_NORMAL, ext.EVENT_UPDATE_NEEDS_NEW_PODS, c.EVENT_ACTION_UPDATE, message
        )
        record(self.recorder, round_.lws, event)

    def _classification(self, round_: Round, old_key: str) -> Classification | None:
        memo = (old_key, round_.revision_key)
        if memo not in self._known:
            if len(self._known) >= KNOWN_CLASSIFICATIONS:
                self._known.clear()  # a bound, not a cache policy: they are cheap to redo
            old = self._revision(round_, old_key)
            if old is None or round_.revision is None:
                return None  # not remembered (yet): the normal rollout, which needs no old template
            self._known[memo] = classify_template_change(
                revision_spec(round_.lws, old),
                revision_spec(round_.lws, round_.revision),
                resizes_in_place=self.resizes_in_place is True,
            )
        return self._known[memo]

    def _revision(self, round_: Round, key: str) -> Obj | None:
        """The set's own revision of `key` (the StatefulSets' revisions carry the same label)."""
        return find_revision(round_.lws, key, self.revisions.of(round_.key))

    async def advance(self, round_: Round, state: InPlaceRound, leader_sts: MutableObj | None) -> None:
        """`leader_sts`: the freshest leader StatefulSet, after the rolling-update step wrote it."""
        for index in state.plan.advance:
            await self._advance_group(round_, state, index, leader_sts)

    async def _advance_group(
        self, round_: Round, state: InPlaceRound, index: int, leader_sts: MutableObj | None
    ) -> None:
        """One step of one group, from what the server holds; every write is idempotent."""
        leader = state.pods[leader_pod_name(round_.key.name, index)]
        classification = state.classifications.get(index)
        old = self._revision(round_, revision_key_of(leader))
        if classification is None or old is None or round_.revision is None:
            return
        old_spec, new_spec = revision_spec(round_.lws, old), revision_spec(round_.lws, round_.revision)
        new_key = round_.revision_key
        worker_sts = state.statefulsets.get(name_of(leader))
        leader_delta = patches.template_delta(
            patches.pod_template(old_spec, c.ROLE_LEADER), patches.pod_template(new_spec, c.ROLE_LEADER)
        )
        if worker_sts is not None:
            delta = patches.template_delta(
                patches.pod_template(old_spec, c.ROLE_WORKER), patches.pod_template(new_spec, c.ROLE_WORKER)
            )
            knock_on = int(patches.restarts_containers(leader_delta, leader))
            workers = state.workers.get(index, [])
            old_template = patches.pod_template(old_spec, c.ROLE_WORKER)
            if not await self._workers_updated(
                state.writes, worker_sts, workers, old_template, delta, new_key, knock_on
            ):
                return
        if leader_sts is None or not _published(leader_sts, new_key):
            return  # the StatefulSet controller has not seen the new template yet: its status wakes us
        await self._patch(state.writes, leader, leader_delta, _revision_labels(new_key, leader_sts))
        record(
            self.recorder,
            round_.lws,
            ControllerEvent(
                c.EVENT_TYPE_NORMAL,
                ext.EVENT_GROUP_UPDATED_IN_PLACE,
                c.EVENT_ACTION_UPDATE,
                updated_in_place_message(index, classification),
            ),
        )

    async def _workers_updated(
        self,
        writes: _SetWrites,
        worker_sts: MutableObj,
        workers: list[MutableObj],
        old_template: Obj,
        delta: patches.TemplateDelta,
        new_key: str,
        knock_on: int,
    ) -> bool:
        """Moves the worker StatefulSet and its pods one step; True once they are all on `new_key`."""
        key = ObjectKey(namespace_of(worker_sts), name_of(worker_sts))
        if revision_key_of(worker_sts) != new_key:
            patch = _held_worker_statefulset(worker_sts, old_template, delta, new_key)
            written = await self.client.patch(
                STATEFULSETS, key.namespace, key.name, patch, patch_type=STRATEGIC_PATCH
            )
            writes.statefulsets.remember(key, written)
            return False  # its controller publishes the update revision next: its status wakes us
        if not _published(worker_sts, new_key):
            return False
        labels = _revision_labels(new_key, worker_sts)
        for pod in workers:
            await self._patch(writes, pod, delta, labels, knock_on)
        if statefulset_partition(worker_sts):
            if not planning.statefulset_counts_labelled(worker_sts, len(workers)):
                return False  # its controller has not seen our labels yet: its status wakes us
            # Every pod is at the update revision, as its controller sees: releasing the partition
            # recreates none.
            patch = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}
            written = await self.client.merge_patch(STATEFULSETS, key.namespace, key.name, patch)
            writes.statefulsets.remember(key, written)
        return True

    async def _patch(
        self,
        writes: _SetWrites,
        pod: Obj,
        delta: patches.TemplateDelta,
        labels: Mapping[str, str],
        knock_on: int = 0,
    ) -> None:
        key = ObjectKey(namespace_of(pod), name_of(pod))
        resize = patches.resize_patch(pod, delta)
        if resize is not None:  # before the revision labels, which mark the pod updated
            written = await self.client.patch(
                PODS, key.namespace, key.name, resize, patch_type=STRATEGIC_PATCH, subresource="resize"
            )
            writes.pods.remember(key, written)
        patch = patches.pod_patch(pod, delta, labels, knock_on=knock_on)
        if patch is not None:
            written = await self.client.patch(
                PODS, key.namespace, key.name, patch, patch_type=STRATEGIC_PATCH
            )
            writes.pods.remember(key, written)


def _freshest(cached: list[MutableObj], memo: WriteMemo, cache_version: str) -> list[MutableObj]:
    """The cached objects, each replaced by what we wrote of it while the watch has not delivered it."""
    fresh = (memo.freshest(ObjectKey(namespace_of(o), name_of(o)), o, cache_version) for o in cached)
    return [o for o in fresh if o is not None]


def _counted(leader_sts: Obj, leaders: Iterable[Obj]) -> bool:
    """The leader StatefulSet's controller counts every leader labelled with its update revision."""
    return planning.statefulset_counts_labelled(
        leader_sts, planning.labelled_at_update_revision(leader_sts, leaders)
    )


def _published(sts: Obj, key: str) -> bool:
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


def _revision_labels(key: str, sts: Obj) -> dict[str, str]:
    return {
        c.LABEL_TEMPLATE_REVISION_HASH: key,
        planning.CONTROLLER_REVISION_HASH: str((sts.get("status") or {}).get("updateRevision")),
    }


def _held_worker_statefulset(
    sts: MutableObj, old_template: Obj, delta: patches.TemplateDelta, key: str
) -> dict[str, Any]:
    """The strategic-merge patch that puts the worker StatefulSet on the new template, its partition
    holding every pod where it is. It names only what the delta changes, so it needs no full
    template: the cache holds none, and nothing else writes these fields of a worker StatefulSet."""
    revision = {c.LABEL_TEMPLATE_REVISION_HASH: key}
    strategy = {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": int(sts["spec"].get("replicas") or 0)},
    }
    return {
        "metadata": {"labels": revision},
        "spec": {
            "template": patches.template_patch(old_template, delta, revision),
            "updateStrategy": strategy,
        },
    }
