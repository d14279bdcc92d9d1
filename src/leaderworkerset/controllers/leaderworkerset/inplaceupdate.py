"""Diff-aware in-place updates (opt-in `update-strategy: InPlaceIfPossible`): the I/O around
`core.rollout.inplaceupdate`.

Gather, decide, apply: `prepare` runs before the rolling-update step, reads the round's snapshot
once (`InPlaceInputs`), asks `decide_in_place_round` for the whole plan, whose hold and keep are the
rolling-update decision's inputs, and settles the pods it names; `advance` runs after that step (the
leader StatefulSet then carries the new template) and applies the writes `group_writes` decides for
each group the plan moves. Everything is read from the watch-fed caches (the pod
projections carry images, resources and tolerations for it), overlaid with what this process wrote
that the watch has not delivered yet (`WriteMemo`), so a round right after a write does not act on
the stale copy. Nothing polls: the StatefulSets' and leader pods' events wake the set as always, and
while an update waits the worker pods' events do too (`under_way`, wired in setup.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass, field

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.events import record
from leaderworkerset.controllers.leaderworkerset.revisions import Revisions
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.controllers.memos import WriteMemo
from leaderworkerset.core.groups.state import is_leader_pod
from leaderworkerset.core.lifecycle.restart import IN_PLACE_RESTARTS_PENDING
from leaderworkerset.core.objects import (
    ControllerEvent,
    MutableObj,
    Obj,
    annotations_of,
    is_deleting,
    name_of,
    namespace_of,
    revision_key_of,
)
from leaderworkerset.core.rollout.inplaceupdate import decision, planning
from leaderworkerset.core.rollout.inplaceupdate.classification import (
    Classification,
    classify_template_change,
    needs_new_pods_message,
)
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
    """What `prepare` gathered and decided, for `advance`, within one reconcile."""

    inputs: decision.InPlaceInputs
    plan: decision.InPlaceRoundPlan
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
        """Gather, decide, and apply what comes before the rolling-update step (the settled pods);
        the plan's hold and keep are that step's inputs."""
        inputs = await self._gather(round_)
        if inputs is None:
            return None
        plan = decision.decide_in_place_round(inputs)
        writes = self._writes.setdefault(round_.key, _SetWrites())
        await self._apply(round_.key, writes, plan.settle)
        self._announce_recreate(round_, plan.needs_new_pods)
        log.debug(
            "in-place update",
            revision=round_.revision_key,
            hold=plan.hold,
            advance=list(plan.advance),
            groups=[(g.state.index, g.state.progress.value, g.state.available) for g in plan.groups],
        )
        if plan.waiting:
            self._waiting.add(round_.key)
        else:
            self._waiting.discard(round_.key)
        # No timed requeue: every step waits on an object whose event wakes the set (the StatefulSet
        # controller's revision and status, a leader pod, a worker pod while `under_way`), and the
        # progress deadline of a halted update is rollout control's requeue.
        return InPlaceRound(inputs, plan, writes)

    async def _gather(self, round_: Round) -> decision.InPlaceInputs | None:
        """The round's snapshot, read once; None when the set has no in-place update to make."""
        lws, key = round_.lws, round_.key
        if not planning.wants_in_place_update(lws) or round_.leader_sts is None or round_.revision is None:
            self.forget(key)
            return None
        leaders = round_.leader_pods(self.informers)
        if decision.leaders_done(round_.leader_sts, leaders, round_.revision_key) and not self._pending(
            round_
        ):
            # Every group is on the revision and settled: the memories are not needed any more.
            self.forget(key)
            return None
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
        old_specs: dict[str, Obj] = {}
        classifications: dict[str, Classification] = {}
        for old_key in {revision_key_of(p) for p in pods.values() if is_leader_pod(p)}:
            old = self._revision(round_, old_key)
            if old is not None:
                old_specs[old_key] = revision_spec(lws, old)
            classification = self._classification(round_, old_key)
            if classification is not None:
                classifications[old_key] = classification
        return decision.InPlaceInputs(
            lws=lws,
            revision_key=round_.revision_key,
            new_spec=revision_spec(lws, round_.revision),
            leader_sts=round_.leader_sts,
            pods=pods,
            statefulsets=statefulsets,
            old_specs=old_specs,
            classifications=classifications,
        )

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

    def _announce_recreate(self, round_: Round, classification: Classification | None) -> None:
        """The event that names the path when a change cannot go in place."""
        memo = (str(round_.lws["metadata"].get("uid")), round_.revision_key)
        if classification is None or memo in self._announced:
            return
        if len(self._announced) >= KNOWN_CLASSIFICATIONS:
            self._announced.clear()
        self._announced.add(memo)
        message = needs_new_pods_message(classification)
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
        """Apply the writes of each group the plan moves. `leader_sts`: the freshest leader
        StatefulSet, after the rolling-update step wrote it."""
        for index in state.plan.advance:
            step = decision.group_writes(state.inputs, state.plan, index, leader_sts)
            await self._apply(round_.key, state.writes, step.writes)
            if step.updated is not None:
                event = ControllerEvent(
                    c.EVENT_TYPE_NORMAL, ext.EVENT_GROUP_UPDATED_IN_PLACE, c.EVENT_ACTION_UPDATE, step.updated
                )
                record(self.recorder, round_.lws, event)

    async def _apply(self, key: ObjectKey, writes: _SetWrites, plan: Iterable[decision.Write]) -> None:
        """Send each write in order, remembering what the server answered until the watch delivers it."""
        for write in plan:
            target, namespace, name, patch = write.target, key.namespace, write.name, write.patch
            if target is decision.Target.POD_RESIZE:
                written = await self.client.patch(
                    PODS, namespace, name, patch, patch_type=STRATEGIC_PATCH, subresource="resize"
                )
            elif target is decision.Target.POD:
                written = await self.client.patch(PODS, namespace, name, patch, patch_type=STRATEGIC_PATCH)
            elif target is decision.Target.POD_SETTLE:
                written = await self.client.merge_patch(PODS, namespace, name, patch)
            elif target is decision.Target.WORKER_TEMPLATE:
                written = await self.client.patch(
                    STATEFULSETS, namespace, name, patch, patch_type=STRATEGIC_PATCH
                )
            else:
                written = await self.client.merge_patch(STATEFULSETS, namespace, name, patch)
            memo = writes.statefulsets if target in _STATEFULSET_WRITES else writes.pods
            memo.remember(ObjectKey(namespace, name), written)


_STATEFULSET_WRITES = frozenset({decision.Target.WORKER_TEMPLATE, decision.Target.WORKER_PARTITION})


def _freshest(cached: list[MutableObj], memo: WriteMemo, cache_version: str) -> list[MutableObj]:
    """The cached objects, each replaced by what we wrote of it while the watch has not delivered it."""
    fresh = (memo.freshest(ObjectKey(namespace_of(o), name_of(o)), o, cache_version) for o in cached)
    return [o for o in fresh if o is not None]
