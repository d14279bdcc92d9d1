"""What must hold over a chaos run, as pure functions of the recorded stream of API changes.

The recorder (``recorder.py``) turns every watch event of the namespace into a `Change`, in the API
server's resourceVersion order; the test adds a `FAILED` change where it injected a real failure
(a container restart). Each check replays the stream through a `World` (what existed at each moment)
and returns its violations as readable sentences, empty when the invariant held:

* `unjustified_pod_deletions` — no pod of a healthy, up-to-date group inside ``replicas`` is deleted
  (only a rollout, a scale-down, a failure or its owner's deletion may delete a pod); checked against
  the world *at the moment of the delete*, so a controller acting on an old cache shows up here.
* `deletes_of_unknown_objects` — every delete targets an object (UID) that existed at that moment.
* `recreations_after_failures` — every group with an injected failure gets exactly one new leader.
* `duplicate_revisions` — no ControllerRevision of a LeaderWorkerSet is created twice.
* `budget_violations` — no observed state asks for more than ``replicas + maxSurge`` leaders or has
  fewer than ``replicas - maxUnavailable`` ready groups (once the set was first fully ready).
* `final_state` — the end state without names that differ between runs (UIDs, namespaces, hash keys),
  so a run with faults can be compared with one without.

Unit-tested on synthetic streams in ``test_invariants.py``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderworkerset.api import constants as c

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
FAILED = "FAILED"  # an injected failure (not an API event)

POD = "Pod"
STATEFULSET = "StatefulSet"
DEPLOYMENT = "Deployment"
REVISION = "ControllerRevision"
LWS = c.LWS_KIND

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Change:
    """One state an object went through (or an injected failure), in resourceVersion order."""

    rv: int
    kind: str
    type: str
    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    owners: tuple[tuple[str, str], ...] = ()  # (kind, name)
    deleting: bool = False
    ready: bool = False
    replicas: int | None = None
    size: int | None = None
    relisted: bool = False  # reconstructed by a relist after a gap in the watch, not seen as it happened

    @property
    def set_name(self) -> str:
        return self.labels.get(c.LABEL_SET_NAME, "")

    @property
    def group(self) -> str:
        return self.labels.get(c.LABEL_GROUP_INDEX, "")

    @property
    def revision(self) -> str:
        return self.labels.get(c.LABEL_TEMPLATE_REVISION_HASH, "")

    @property
    def is_leader(self) -> bool:
        return self.labels.get(c.LABEL_WORKER_INDEX) == "0"

    @property
    def sort_key(self) -> tuple[int, int]:
        # An injected failure carries the resourceVersion of the write that injected it and comes first.
        return (self.rv, 0 if self.type == FAILED else 1)


def _pod_ready(obj: Obj) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(cond.get("type") == "Ready" and cond.get("status") == "True" for cond in conditions)


def change_of(kind: str, event_type: str, obj: Obj, *, relisted: bool = False) -> Change:
    """The `Change` a watch event (or a relist) of ``obj`` stands for."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    size = (spec.get("leaderWorkerTemplate") or {}).get("size") if kind == LWS else None
    replicas = spec.get("replicas") if kind in (LWS, STATEFULSET, DEPLOYMENT) else None
    return Change(
        rv=int(meta.get("resourceVersion") or 0),
        kind=kind,
        type=event_type,
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        labels=dict(meta.get("labels") or {}),
        owners=tuple((o.get("kind", ""), o.get("name", "")) for o in meta.get("ownerReferences") or []),
        deleting=meta.get("deletionTimestamp") is not None,
        ready=kind == POD and meta.get("deletionTimestamp") is None and _pod_ready(obj),
        replicas=None if replicas is None else int(replicas),
        size=None if size is None else int(size),
        relisted=relisted,
    )


def failure(rv: int, lws: str, group: str) -> Change:
    """An injected failure in group ``group`` of ``lws`` (rv: the injecting write's resourceVersion)."""
    labels = {c.LABEL_SET_NAME: lws, c.LABEL_GROUP_INDEX: group}
    return Change(rv=rv, kind=POD, type=FAILED, name=f"{lws}/{group}", labels=labels)


def ordered(changes: Sequence[Change]) -> list[Change]:
    return sorted(changes, key=lambda ch: ch.sort_key)


# ----- the world at one moment ---------------------------------------------------------------------
class World:
    """What existed after the changes replayed so far."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Change] = {}
        self.pending_failures: dict[tuple[str, str], str] = {}  # (lws, group) -> leader uid then
        self._revision_order: dict[str, int] = {}

    def get(self, kind: str, name: str) -> Change | None:
        return self.objects.get((kind, name))

    def of_kind(self, kind: str) -> Iterator[Change]:
        return (obj for (k, _), obj in self.objects.items() if k == kind)

    def leader(self, lws: str, group: str) -> Change | None:
        return next((p for p in self.group_pods(lws, group) if p.is_leader), None)

    def group_pods(self, lws: str, group: str) -> list[Change]:
        return [p for p in self.of_kind(POD) if p.set_name == lws and p.group == group]

    def apply(self, change: Change) -> None:
        if change.type == FAILED:
            leader = self.leader(change.set_name, change.group)
            self.pending_failures[(change.set_name, change.group)] = leader.uid if leader else ""
            return
        key = (change.kind, change.name)
        if change.type == DELETED:
            if (current := self.objects.get(key)) is not None and current.uid == change.uid:
                del self.objects[key]
            return
        if change.kind == POD and change.is_leader:
            pending = (change.set_name, change.group)
            if pending in self.pending_failures and self.pending_failures[pending] != change.uid:
                del self.pending_failures[pending]  # a new leader: the group was recreated
        if change.kind == REVISION and change.name not in self._revision_order:
            self._revision_order[change.name] = len(self._revision_order)
        self.objects[key] = change

    def update_revision(self, lws: str) -> str | None:
        """The revision key a LeaderWorkerSet is rolling to: its newest ControllerRevision's."""
        revisions = [r for r in self.of_kind(REVISION) if r.set_name == lws and _owned_by_lws(r)]
        if not revisions:
            return None
        return max(revisions, key=lambda r: self._revision_order[r.name]).revision

    def healthy(self, lws: Change, group: str) -> bool:
        """Every pod of the group exists, is Ready and not leaving, and no failure is pending."""
        if (lws.name, group) in self.pending_failures:
            return False
        pods = self.group_pods(lws.name, group)
        return len(pods) == (lws.size or 1) and all(p.ready and not p.deleting for p in pods)


def failure_candidates(changes: Sequence[Change], lws_name: str) -> list[str]:
    """The groups of ``lws_name`` an injected failure may hit: within replicas, healthy, and with
    *every* pod on the revision being rolled to. A rollout replaces the leader first and the old
    workers go only afterwards (the garbage collector, in the background): a failure of such a
    worker belongs to a group already being replaced, which the controller rightly leaves alone."""
    world = World()
    for change in ordered(changes):
        world.apply(change)
    lws = world.get(LWS, lws_name)
    assert lws is not None, f"no LeaderWorkerSet {lws_name} to fail"
    assert lws.replicas is not None
    revision = world.update_revision(lws_name)
    groups = {p.group for p in world.of_kind(POD) if p.set_name == lws_name and int(p.group) < lws.replicas}
    current = {g for g in groups if all(p.revision == revision for p in world.group_pods(lws_name, g))}
    return sorted(g for g in current if world.healthy(lws, g))


def _owned_by_lws(change: Change) -> bool:
    return any(kind == LWS for kind, _ in change.owners)


def _replay(changes: Sequence[Change]) -> Iterator[tuple[World, Change]]:
    """Each change with the world just before it (the world is then updated in place)."""
    world = World()
    for change in ordered(changes):
        yield world, change
        world.apply(change)


def _is_new_deletion(world: World, change: Change) -> bool:
    if change.type not in (MODIFIED, DELETED):
        return False
    before = world.get(change.kind, change.name)
    if change.type == MODIFIED and not change.deleting:
        return False
    return not (before is not None and before.uid == change.uid and before.deleting)


# ----- the checks ----------------------------------------------------------------------------------
def why_deleted(world: World, pod: Change) -> str | None:
    """Why deleting ``pod`` now is legitimate, or None if it belongs to a healthy, current group."""
    lws = world.get(LWS, pod.set_name)
    if lws is None or lws.deleting:
        return "its LeaderWorkerSet is gone or leaving"
    if not pod.group:
        return "it is not in a group yet"
    if pod.revision != world.update_revision(lws.name):
        return "rollout: it is not on the update revision"
    if pod.group.isdigit() and int(pod.group) >= (lws.replicas or 0):
        return "scale-down or surge: its group is beyond replicas"
    if not world.healthy(lws, pod.group):
        return "its group is not healthy (failed, incomplete or leaving)"
    return None


def unjustified_pod_deletions(changes: Sequence[Change]) -> list[str]:
    """Deletes of pods in healthy, up-to-date groups within ``replicas``.

    A deletion seen only by a relist (the watch had a gap) is judged against the world once the whole
    relisted batch is in: the moment it happened is unknown, but the end of the gap is a moment at
    which a legitimate delete is still explained (an old revision stays old, a group beyond replicas
    stays beyond).
    """
    violations: list[str] = []
    deferred: list[Change] = []
    world = World()

    def judge(pod: Change) -> None:
        if pod.set_name and why_deleted(world, pod) is None:
            seen = "after a watch gap" if pod.relisted else f"at rv {pod.rv}"
            violations.append(
                f"pod {pod.name} (uid {pod.uid[:8]}, group {pod.group[:8]}, revision {pod.revision[:8]}) "
                f"of a healthy, up-to-date group was deleted {seen}"
            )

    for change in ordered(changes):
        if deferred and not change.relisted:
            for pod in deferred:
                judge(pod)
            deferred.clear()
        if change.kind == POD and _is_new_deletion(world, change):
            if change.relisted:
                deferred.append(change)
            else:
                judge(change)
        world.apply(change)
    for pod in deferred:
        judge(pod)
    return violations


def deletes_of_unknown_objects(changes: Sequence[Change]) -> list[str]:
    """Deletes (a deletionTimestamp or a DELETED event) of a UID that did not exist at that moment."""
    violations = []
    for world, change in _replay(changes):
        if change.type == FAILED or change.relisted or not _is_new_deletion(world, change):
            continue
        before = world.get(change.kind, change.name)
        if before is None or before.uid != change.uid:
            known = f"uid {before.uid[:8]} existed" if before else "nothing of that name existed"
            violations.append(
                f"{change.kind} {change.name} uid {change.uid[:8]} deleted at rv {change.rv}: {known}"
            )
    return violations


def recreations_after_failures(changes: Sequence[Change]) -> list[str]:
    """Every injected failure is followed by exactly one new leader for its group (until the next
    failure injected into the same group)."""
    violations = []
    injected: list[tuple[Change, str]] = []  # (failure, leader uid then)
    new_leaders: dict[int, set[str]] = defaultdict(set)
    open_failure: dict[tuple[str, str], int] = {}
    for world, change in _replay(changes):
        if change.type == FAILED:
            leader = world.leader(change.set_name, change.group)
            open_failure[(change.set_name, change.group)] = len(injected)
            injected.append((change, leader.uid if leader else ""))
        elif change.kind == POD and change.type == ADDED and change.is_leader:
            index = open_failure.get((change.set_name, change.group))
            if index is not None and change.uid != injected[index][1]:
                new_leaders[index].add(change.uid)
    for index, (fault, _) in enumerate(injected):
        count = len(new_leaders[index])
        if count != 1:
            violations.append(
                f"group {fault.group} of {fault.set_name} (failure at rv {fault.rv}) recreated {count} times"
            )
    return violations


def duplicate_revisions(changes: Sequence[Change]) -> list[str]:
    """A LeaderWorkerSet's ControllerRevision created more than once (same name or same key)."""
    created: dict[tuple[str, str], set[str]] = defaultdict(set)
    for change in changes:
        if change.kind == REVISION and change.type == ADDED and _owned_by_lws(change):
            created[(change.set_name, change.revision or change.name)].add(change.uid)
    return [
        f"revision {key[:8]} of {lws} created {len(uids)} times"
        for (lws, key), uids in sorted(created.items())
        if len(uids) > 1
    ]


@dataclass(frozen=True)
class Budget:
    """A LeaderWorkerSet's rollout budget, as integers (the test resolves percentages)."""

    lws: str
    max_surge: int
    max_unavailable: int


def ready_groups(world: World, lws: Change) -> int:
    groups = {p.group for p in world.of_kind(POD) if p.set_name == lws.name and p.group}
    return sum(
        1
        for group in groups
        if (pods := world.group_pods(lws.name, group))
        and len(pods) == (lws.size or 1)
        and all(p.ready for p in pods)
    )


def budget_violations(changes: Sequence[Change], budgets: Sequence[Budget]) -> list[str]:
    """Episodes with more leaders asked for than ``replicas + maxSurge``, or (once every group was
    ready) fewer ready groups than ``replicas - maxUnavailable``; one sentence per episode, at its start."""
    violations: list[str] = []
    armed: set[str] = set()
    breaking: set[tuple[str, str]] = set()  # (lws, what) currently out of budget
    world = World()

    def report(lws: str, what: str, broken: bool, sentence: str) -> None:
        if broken and (lws, what) not in breaking:
            violations.append(sentence)
        (breaking.add if broken else breaking.discard)((lws, what))

    for change in ordered(changes):
        world.apply(change)
        for budget in budgets:
            lws = world.get(LWS, budget.lws)
            if lws is None or lws.replicas is None:
                continue
            if change.name != budget.lws and change.set_name != budget.lws:
                continue
            ceiling = lws.replicas + budget.max_surge
            for kind in (STATEFULSET, DEPLOYMENT):
                leaders = world.get(kind, budget.lws)
                asked = 0 if leaders is None else leaders.replicas or 0
                report(budget.lws, kind, asked > ceiling,
                       f"{kind} {budget.lws} asks for {asked} leaders at rv {change.rv}, "
                       f"more than replicas {lws.replicas} + maxSurge {budget.max_surge}")  # fmt: skip
            ready = ready_groups(world, lws)
            if ready >= lws.replicas:
                armed.add(budget.lws)
            floor = lws.replicas - budget.max_unavailable
            report(budget.lws, "ready", budget.lws in armed and ready < floor,
                   f"{budget.lws} had {ready} ready groups at rv {change.rv}, fewer than replicas "
                   f"{lws.replicas} - maxUnavailable {budget.max_unavailable}")  # fmt: skip
    return violations


def final_state(changes: Sequence[Change]) -> dict[str, Any]:
    """Per LeaderWorkerSet at the end: replicas, live revisions, and each pod's place, readiness and
    revision (keys numbered by creation order, Hash group keys by their sorted position), without
    UIDs or namespaces — equal for two runs that converged to the same state."""
    world = World()
    for change in ordered(changes):
        world.apply(change)
    state: dict[str, Any] = {}
    for lws in sorted(world.of_kind(LWS), key=lambda x: x.name):
        revisions = sorted(
            (r for r in world.of_kind(REVISION) if r.set_name == lws.name and _owned_by_lws(r)),
            key=lambda r: world._revision_order[r.name],
        )
        number = {r.revision: f"rev{i}" for i, r in enumerate(revisions)}
        pods = [p for p in world.of_kind(POD) if p.set_name == lws.name]
        groups = sorted({p.group for p in pods})
        place = {g: g if g.isdigit() else f"hash{i}" for i, g in enumerate(groups)}
        state[lws.name] = {
            "replicas": lws.replicas,
            "revisions": len(revisions),
            "pods": sorted(
                (place[p.group], p.labels.get(c.LABEL_WORKER_INDEX, ""), p.ready, number.get(p.revision, "?"))
                for p in pods
                if not p.deleting
            ),
        }
    return state
