"""Diff-aware in-place updates (opt-in `update-strategy: InPlaceIfPossible`): the I/O around
`core.rollout.inplaceupdate`.

`prepare` runs before the rolling-update step and decides whether the leader StatefulSet's
partition is held; `advance` runs after it (the leader StatefulSet then carries the new template)
and patches the groups the plan moves. Only while some leader is behind the set's revision does it
read anything beyond the caches: the set's pods and StatefulSets, fresh from the API server (the
cached projections carry neither images nor revisions), so a manager restarted mid-update decides
from what the server holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.events import record
from leaderworkerset.controllers.leaderworkerset.revisions import Revisions
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.core.groups.naming import leader_pod_name
from leaderworkerset.core.groups.state import pod_ready
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
    revision_key_of,
)
from leaderworkerset.core.rollout import inplaceupdate as ip
from leaderworkerset.core.rollout.control import rollout_control
from leaderworkerset.core.rollout.inplace import Classification, classify
from leaderworkerset.core.rollout.partition import rollout_budget
from leaderworkerset.core.rollout.revision import find_revision, revision_spec
from leaderworkerset.runtime.client import STRATEGIC_PATCH, serves_pod_resize
from leaderworkerset.runtime.resources import PODS, STATEFULSETS

log = structlog.get_logger(__name__)

KNOWN_CLASSIFICATIONS = 1024

# How soon a round that waits on the StatefulSet controller or the kubelet looks again; the
# StatefulSets' and pods' own events usually come first.
WAIT_SECONDS = 1.0


@dataclass
class InPlaceRound:
    """What `prepare` read for `advance`, within one reconcile."""

    plan: ip.InPlacePlan
    pods: dict[str, MutableObj]
    workers: dict[int, list[MutableObj]]
    statefulsets: dict[str, MutableObj]
    classifications: dict[int, Classification]


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

    async def prepare(self, round_: Round) -> InPlaceRound | None:
        lws, key = round_.lws, round_.key
        if not ip.wants_in_place(lws) or round_.leader_sts is None or round_.revision is None:
            return None
        if all(
            revision_key_of(p) == round_.revision_key for p in round_.leader_pods(self.informers)
        ) and not self._pending(round_):
            return None  # every group is on the set's revision and settled: nothing to do
        if self.resizes_in_place is None:
            self.resizes_in_place = await serves_pod_resize(self.client)
        selector = f"{c.LABEL_SET_NAME}={key.name}"
        pods = {
            name_of(p): p for p in await self.client.list(PODS, key.namespace, selector) if not is_deleting(p)
        }
        statefulsets = {name_of(s): s for s in await self.client.list(STATEFULSETS, key.namespace, selector)}
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
                classification = ip.for_group(classification, [leader, *members])
            progress = ip.group_progress(leader, members, worker_sts, round_.revision_key, classification)
            available = all(pod_ready(p) for p in [leader, *members])
            if progress is ip.GroupProgress.DONE:
                available = available and all(ip.pod_settled(p) for p in [leader, *members])
            groups.append(ip.GroupInPlace(index, progress, available, classification))
            if progress is ip.GroupProgress.DONE and available:
                await self._settle([leader, *members])
            workers[index] = members
            if classification is not None:
                classifications[index] = classification
        self._announce_recreate(round_, groups)
        halted = rollout_control(lws).paused or ip.halted(lws)
        plan = ip.plan_groups(groups, max_unavailable=rollout_budget(lws).unavailable, halted=halted)
        log.debug(
            "in-place update",
            revision=round_.revision_key,
            hold=plan.hold,
            advance=list(plan.advance),
            groups=[(g.index, g.progress.value, g.available) for g in groups],
        )
        if plan.hold or any(not g.available for g in groups):
            round_.requeue_after = min(round_.requeue_after or WAIT_SECONDS, WAIT_SECONDS)
        return InPlaceRound(plan, pods, workers, statefulsets, classifications)

    def _pending(self, round_: Round) -> bool:
        """Some pod of the set still waits for its group to settle (cached annotations suffice)."""
        pods = self.informers.set_pods(round_.key.namespace, round_.key.name)
        return any(
            annotations_of(p).get(ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS) == IN_PLACE_RESTARTS_PENDING
            for p in pods
        )

    async def _settle(self, pods: list[MutableObj]) -> None:
        for pod in pods:
            patch = ip.settle_patch(pod)
            if patch is not None:
                await self.client.merge_patch(PODS, pod["metadata"]["namespace"], name_of(pod), patch)

    def _announce_recreate(self, round_: Round, groups: list[ip.GroupInPlace]) -> None:
        """The event that names the path when a change cannot go in place."""
        recreated = next((g for g in groups if g.progress is ip.GroupProgress.RECREATE), None)
        memo = (str(round_.lws["metadata"].get("uid")), round_.revision_key)
        if recreated is None or recreated.classification is None or memo in self._announced:
            return
        if len(self._announced) >= KNOWN_CLASSIFICATIONS:
            self._announced.clear()
        self._announced.add(memo)
        message = ip.needs_new_pods_message(recreated.classification)
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
            self._known[memo] = classify(
                revision_spec(round_.lws, old),
                revision_spec(round_.lws, round_.revision),
                resizes_in_place=self.resizes_in_place is True,
            )
        return self._known[memo]

    def _revision(self, round_: Round, key: str) -> Obj | None:
        """The set's own revision of `key` (the StatefulSets' revisions carry the same label)."""
        return find_revision(round_.lws, key, self.revisions.of(round_.key))

    async def advance(self, round_: Round, state: InPlaceRound) -> None:
        for index in state.plan.advance:
            await self._advance_group(round_, state, index)

    async def _advance_group(self, round_: Round, state: InPlaceRound, index: int) -> None:
        """One step of one group, from what the server holds; every write is idempotent."""
        leader = state.pods[leader_pod_name(round_.key.name, index)]
        classification = state.classifications.get(index)
        old = self._revision(round_, revision_key_of(leader))
        if classification is None or old is None or round_.revision is None:
            return
        old_spec, new_spec = revision_spec(round_.lws, old), revision_spec(round_.lws, round_.revision)
        new_key = round_.revision_key
        worker_sts = state.statefulsets.get(name_of(leader))
        leader_delta = ip.template_delta(
            ip.pod_template(old_spec, c.ROLE_LEADER), ip.pod_template(new_spec, c.ROLE_LEADER)
        )
        if worker_sts is not None:
            delta = ip.template_delta(
                ip.pod_template(old_spec, c.ROLE_WORKER), ip.pod_template(new_spec, c.ROLE_WORKER)
            )
            knock_on = int(ip.restarts_containers(leader_delta, leader))
            workers = state.workers.get(index, [])
            if not await self._workers_updated(worker_sts, workers, delta, new_key, knock_on):
                return
        leader_sts = await self.client.get(STATEFULSETS, round_.key.namespace, round_.key.name)
        if not _published(leader_sts, new_key):
            return  # the StatefulSet controller has not seen the new template yet
        await self._patch(leader, leader_delta, _revision_labels(new_key, leader_sts))
        record(
            self.recorder,
            round_.lws,
            ControllerEvent(
                c.EVENT_TYPE_NORMAL,
                ext.EVENT_GROUP_UPDATED_IN_PLACE,
                c.EVENT_ACTION_UPDATE,
                ip.updated_in_place_message(index, classification),
            ),
        )

    async def _workers_updated(
        self,
        worker_sts: MutableObj,
        workers: list[MutableObj],
        delta: ip.TemplateDelta,
        new_key: str,
        knock_on: int,
    ) -> bool:
        """Moves the worker StatefulSet and its pods one step; True once they are all on `new_key`."""
        if revision_key_of(worker_sts) != new_key:
            meta = worker_sts["metadata"]
            await self.client.json_patch(
                STATEFULSETS,
                meta["namespace"],
                meta["name"],
                _held_worker_statefulset(worker_sts, delta, new_key),
            )
            return False  # its controller publishes the update revision next
        if not _published(worker_sts, new_key):
            return False
        labels = _revision_labels(new_key, worker_sts)
        for pod in workers:
            await self._patch(pod, delta, labels, knock_on)
        if ((worker_sts["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition"):
            # Every pod is at the update revision: releasing the partition recreates none.
            patch = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}
            await self.client.merge_patch(
                STATEFULSETS, worker_sts["metadata"]["namespace"], name_of(worker_sts), patch
            )
        return True

    async def _patch(
        self, pod: Obj, delta: ip.TemplateDelta, labels: Mapping[str, str], knock_on: int = 0
    ) -> None:
        namespace = pod["metadata"]["namespace"]
        resize = ip.resize_patch(pod, delta)
        if resize is not None:  # before the revision labels, which mark the pod updated
            await self.client.patch(
                PODS, namespace, name_of(pod), resize, patch_type=STRATEGIC_PATCH, subresource="resize"
            )
        patch = ip.pod_patch(pod, delta, labels, knock_on=knock_on)
        if patch is not None:
            await self.client.patch(
                PODS, pod["metadata"]["namespace"], name_of(pod), patch, patch_type=STRATEGIC_PATCH
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
        ip.CONTROLLER_REVISION_HASH: str((sts.get("status") or {}).get("updateRevision")),
    }


def _held_worker_statefulset(sts: MutableObj, delta: ip.TemplateDelta, key: str) -> list[dict[str, Any]]:
    """The JSON patch that puts the worker StatefulSet on the new template, its partition holding
    every pod where it is (guarded by the resourceVersion it was made from)."""
    spec = sts["spec"]
    labels = {**labels_of(sts), c.LABEL_TEMPLATE_REVISION_HASH: key}
    template = ip.patched_template(spec["template"], delta, {c.LABEL_TEMPLATE_REVISION_HASH: key})
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": int(spec.get("replicas") or 0)}}
    return [
        {"op": "test", "path": "/metadata/resourceVersion", "value": sts["metadata"]["resourceVersion"]},
        {"op": "replace", "path": "/metadata/labels", "value": labels},
        {"op": "replace", "path": "/spec/template", "value": template},
        {"op": "replace", "path": "/spec/updateStrategy", "value": strategy},
    ]
