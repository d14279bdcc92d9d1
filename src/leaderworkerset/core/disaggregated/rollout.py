"""The DisaggregatedSet rollout executor's decision, one slice at a time.

While a slice has child LeaderWorkerSets at a revision other than the target, every reconcile takes
one step and requeues after a second: make the target revision structurally complete, repair
missing ``initial-replicas`` baselines, snapshot every role, then either finish, or pick the old
revision to drain and let the planner (``planner.py``) choose a safe step; when its step would
leave an old revision with a role missing, the drain coordinator reshapes it. Old replicas are
always scaled down before new ones are scaled up, so the surge ceiling holds between the writes.

``decide_rollout`` is pure: it reads plain views of the observed children and returns what to
write; the controller applies it and emits the events. The decision sequence is upstream v1.0's
executor, including the order of its writes within one reconcile.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

from leaderworkerset.api import constants as c
from leaderworkerset.core.conditions import parse_time
from leaderworkerset.core.disaggregated.planner import (
    Budget,
    RoleSnapshot,
    Step,
    hard_new_limits,
    is_ready_complete,
    is_spec_complete,
    max_safe_drain,
    next_step,
)
from leaderworkerset.core.gocompat.intstr import IntOrPercentError, scaled_value

__all__ = [
    "ChildView",
    "DsRolloutDecision",
    "IntOrPercent",
    "RevisionGroup",
    "RoleTarget",
    "ScaleChange",
    "committed_ready",
    "coordinate_drain",
    "decide_rollout",
    "group_by_revision",
    "plan_scale_down",
    "role_budget",
    "without_surge_role",
]

IntOrPercent = int | str | None
DecisionKind = Literal["create", "backfill", "scale", "complete", "blocked", "wait"]

# Upstream's defaults when a role has no rollingUpdateConfiguration: replace one at a time.
ROLE_DEFAULT_MAX_SURGE = 1
ROLE_DEFAULT_MAX_UNAVAILABLE = 0


@dataclass(frozen=True)
class ChildView:
    """One observed child LeaderWorkerSet of one slice (from the cache)."""

    name: str
    role: str
    revision: str  # label disaggregatedset.x-k8s.io/revision
    spec_replicas: int  # spec.replicas (nil -> 1)
    status_replicas: int  # status.replicas (absent -> 0)
    ready_replicas: int  # status.readyReplicas (absent -> 0)
    initial_replicas: int | None  # annotation initial-replicas, None if absent/unparsable
    created: str  # metadata.creationTimestamp (RFC 3339), orders old revisions newest first
    terminating: bool = False  # metadata.deletionTimestamp set


@dataclass(frozen=True)
class RoleTarget:
    """One role of the DS spec (target revision), with its desired per-slice replicas resolved."""

    name: str
    desired: int
    max_surge: IntOrPercent = None
    max_unavailable: IntOrPercent = None
    has_rolling_update_config: bool = False
    external: bool = False


@dataclass(frozen=True)
class ScaleChange:
    lws: str  # child LWS name
    role: str
    revision: str
    replicas: int  # new spec.replicas
    from_replicas: int = 0  # spec.replicas before the change (for the ScalingUp/ScalingDown note)


@dataclass(frozen=True)
class DsRolloutDecision:
    """What one reconcile of a slice in rollout writes, in this order: ``backfill`` (whatever the
    kind), ``sync_initial``, then ``create`` or ``scale_down`` and, after every scale-down
    succeeded, ``scale_up``.

    ``kind``: ``create`` — target LWS were missing (``started`` when none existed: the
    RollingUpdateStarted event); ``backfill`` — only baselines were repaired (kept for the
    contract; decide_rollout folds back-fills into the step they precede, as upstream does);
    ``scale`` — a step; ``complete`` — delete the old LWS; ``blocked`` — the drain coordinator
    found nothing safe (RevisionDrainBlocked with ``message``); ``wait`` — nothing to do until
    readiness changes (requeue).
    """

    kind: DecisionKind
    create: tuple[tuple[str, int], ...] = ()  # (role, initial-replicas) created with 0 replicas
    backfill: tuple[tuple[str, int], ...] = ()  # (lws, initial-replicas) for old LWS lacking it
    scale_down: tuple[ScaleChange, ...] = ()
    scale_up: tuple[ScaleChange, ...] = ()
    message: str = ""
    started: bool = False
    sync_initial: tuple[tuple[str, int], ...] = ()  # (lws, desired) on target LWS whose baseline moved
    step: Step | None = field(default=None, compare=False)  # the planner's step, for `lws plan`


# --------------------------------------------------------------------------------------------------
# budgets and readiness
# --------------------------------------------------------------------------------------------------


def _scaled_or_zero(value: IntOrPercent, total: int, *, round_up: bool) -> int:
    # Upstream discards the conversion error and keeps the 0 it returns; a bad value cannot get
    # past admission, so this only matters for objects that skipped the webhook.
    if value is None:
        return 0
    try:
        return scaled_value(value, total, round_up=round_up)
    except IntOrPercentError:
        return 0


def role_budget(role: RoleTarget) -> Budget:
    """maxSurge scaled on the desired replicas rounding up, maxUnavailable rounding down; surge is
    taken alone only when unavailable is 0 and surge positive, so 0/0 keeps the default surge 1."""
    if not role.has_rolling_update_config:
        return Budget(ROLE_DEFAULT_MAX_SURGE, ROLE_DEFAULT_MAX_UNAVAILABLE)
    surge = _scaled_or_zero(role.max_surge, role.desired, round_up=True)
    unavailable = _scaled_or_zero(role.max_unavailable, role.desired, round_up=False)
    if unavailable > 0:
        return Budget(surge, unavailable)
    if surge > 0:
        return Budget(surge, ROLE_DEFAULT_MAX_UNAVAILABLE)
    return Budget(ROLE_DEFAULT_MAX_SURGE, ROLE_DEFAULT_MAX_UNAVAILABLE)


def without_surge_role(role: RoleTarget) -> RoleTarget:
    """The role while its surge is given back (capacity-aware surge, core/rollout/surgefallback/): no
    surge, `max(maxUnavailable, 1)` at a time. The planner never shrinks the new side, so a Pending
    new replica stays and an old one drains to make room for it."""
    budget = role_budget(role)
    return replace(
        role, max_surge=0, max_unavailable=max(budget.max_unavailable, 1), has_rolling_update_config=True
    )


def committed_ready(child: ChildView | None) -> int:
    """Ready replicas that may authorise another scale-down: any replica above Spec may be a Ready
    one already chosen for deletion, so it is not counted twice."""
    if child is None:
        return 0
    pending_drain = max(0, child.status_replicas - child.spec_replicas)
    return min(child.spec_replicas, max(0, child.ready_replicas - pending_drain))


# --------------------------------------------------------------------------------------------------
# revisions of a slice
# --------------------------------------------------------------------------------------------------

GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


def created_at(child: ChildView) -> datetime:
    moment = parse_time(child.created)
    return GO_ZERO_TIME if moment is None else moment  # Go's zero time: an unreadable one sorts as the oldest


@dataclass(frozen=True)
class RevisionGroup:
    """The child LWS of one revision in one slice, by role."""

    name: str
    roles: Mapping[str, ChildView]

    def latest_created(self) -> datetime:
        return max((created_at(child) for child in self.roles.values()), default=GO_ZERO_TIME)

    def spec_total(self) -> int:
        return sum(child.spec_replicas for child in self.roles.values())

    def fully_unready(self) -> bool:
        # Observed readiness, not committed: replicas reserved by an in-flight drain still serve.
        return all(child.ready_replicas <= 0 for child in self.roles.values())


def group_by_revision(children: Iterable[ChildView]) -> dict[str, dict[str, ChildView]]:
    grouped: dict[str, dict[str, ChildView]] = {}
    for child in children:
        grouped.setdefault(child.revision, {})[child.role] = child  # a later duplicate wins
    return grouped


def _newest_first(revisions: Iterable[RevisionGroup]) -> list[RevisionGroup]:
    by_name = sorted(revisions, key=lambda revision: revision.name)
    return sorted(by_name, key=lambda revision: revision.latest_created(), reverse=True)


def baseline(child: ChildView) -> int:
    return child.initial_replicas if child.initial_replicas is not None else child.spec_replicas


def _revision_to_drain(old: Sequence[RevisionGroup]) -> tuple[RevisionGroup | None, bool]:
    """The old revision this phase drains: one without any Ready replica goes first (it
    serves nothing), otherwise the newest; empty revisions are skipped. Returns (revision,
    fully_unready)."""
    newest: RevisionGroup | None = None
    for revision in _newest_first(old):
        if revision.spec_total() == 0:
            continue
        if newest is None:
            newest = revision
        if revision.fully_unready():
            return revision, True
    return newest, False


# --------------------------------------------------------------------------------------------------
# the drain coordinator
# --------------------------------------------------------------------------------------------------


def coordinate_drain(
    role_names: Sequence[str],
    revision: RevisionGroup,
    drain: list[int],
    new_targets: list[int],
    parked_ready: Sequence[int] | None,
    snapshot: Sequence[RoleSnapshot],
) -> bool:
    """Stop a step from leaving an old revision with some roles gone and others still serving.

    In order: retire the whole revision if every role can go within its availability budget;
    otherwise turn full drains into partial ones that keep one replica of every role; otherwise any
    other safe partial drain; otherwise grow the new roles that keep the revision alive, up to the
    hard limits (the window is relaxed here on purpose: it is the liveness escape); otherwise the
    step is blocked (True). ``drain`` and ``new_targets`` are changed in place.
    """
    present = {
        i: revision.roles[name]
        for i, name in enumerate(role_names)
        if name in revision.roles and revision.roles[name].spec_replicas != 0
    }
    alive_after = any(child.spec_replicas > drain[i] for i, child in present.items())
    retires_some = any(drain[i] == child.spec_replicas for i, child in present.items())
    if not alive_after or not retires_some:
        return False
    # Only Ready replicas spend availability; unready ones retire for free.
    if all(committed_ready(child) <= max_safe_drain(snapshot[i]) for i, child in present.items()):
        for i, name in enumerate(role_names):
            if name in revision.roles:
                drain[i] = revision.roles[name].spec_replicas
        return False

    for i, name in enumerate(role_names):
        child = revision.roles.get(name)
        if child is not None and child.spec_replicas > 0 and drain[i] == child.spec_replicas:
            drain[i] = child.spec_replicas - 1
    if any(amount > 0 for amount in drain):
        return False
    for i, name in enumerate(role_names):
        child = revision.roles.get(name)
        if child is not None:
            drain[i] = min(max(0, child.spec_replicas - 1), max_safe_drain(snapshot[i]))
    if any(amount > 0 for amount in drain):
        return False

    limits = hard_new_limits(snapshot)
    for i, child in present.items():
        needed = committed_ready(child) - max_safe_drain(snapshot[i])
        if needed <= 0:
            continue
        role = snapshot[i]
        phase_target = role.new_target
        if parked_ready is not None and i < len(parked_ready):
            phase_target -= parked_ready[i]
        phase_target = max(role.new_spec, phase_target)
        new_targets[i] = max(new_targets[i], min(limits[i], phase_target, role.new_spec + needed))
    return all(new_targets[i] <= role.new_spec for i, role in enumerate(snapshot))


# --------------------------------------------------------------------------------------------------
# the decision
# --------------------------------------------------------------------------------------------------


def _snapshot(
    role_names: Sequence[str],
    spec_roles: Mapping[str, RoleTarget],
    old: Sequence[RevisionGroup],
    target_children: Mapping[str, ChildView],
    advance: bool,
) -> list[RoleSnapshot]:
    snapshot = []
    for name in role_names:
        olds = [revision.roles[name] for revision in old if name in revision.roles]
        spec_role = spec_roles.get(name)
        new_child = target_children.get(name) if spec_role is not None else None
        new_target = spec_role.desired if spec_role is not None else 0
        if spec_role is not None and spec_role.external and old and new_child is not None and not advance:
            # No-shrink guard: an autoscaler lowering an External role mid-rollout must not shrink
            # the new revision while the old one still drains; released when the rollout ends
            # (AdvanceRollout applies the lower target at once, within the availability floor).
            new_target = max(new_target, new_child.spec_replicas)
        snapshot.append(
            RoleSnapshot(
                initial_old=max((baseline(child) for child in olds), default=0),
                old_spec=sum(child.spec_replicas for child in olds),
                old_ready=sum(committed_ready(child) for child in olds),
                new_spec=new_child.spec_replicas if new_child is not None else 0,
                new_ready=committed_ready(new_child),
                new_target=new_target,
                budget=role_budget(spec_role) if spec_role is not None else Budget(),
                advance=advance,
            )
        )
    return snapshot


def plan_scale_down(
    role_names: Sequence[str],
    revisions: Sequence[RevisionGroup],
    snapshot: Sequence[RoleSnapshot],
    step: Step,
    new_targets: list[int],
    parked_ready: Sequence[int] | None,
) -> tuple[tuple[ScaleChange, ...], str]:
    """Drain the newest revision that can take some of the step's drain (only one per step, so a
    budget never moves past the revision that can use it); returns the changes and, when the
    coordinator is blocked, the revision it waits to retire."""
    budget = [
        max(0, min(role.old_spec - past, max_safe_drain(role)))
        for role, past in zip(snapshot, step.past, strict=True)
    ]
    for revision in _newest_first(revisions):
        whole = revision.fully_unready()
        drain = [0] * len(role_names)
        for i, name in enumerate(role_names):
            child = revision.roles.get(name)
            if child is not None:
                drain[i] = child.spec_replicas if whole else min(budget[i], child.spec_replicas)
        if not any(amount > 0 for amount in drain):
            continue
        blocked = coordinate_drain(role_names, revision, drain, new_targets, parked_ready, snapshot)
        changes = tuple(
            ScaleChange(
                lws=child.name,
                role=name,
                revision=revision.name,
                replicas=child.spec_replicas - drain[i],
                from_replicas=child.spec_replicas,
            )
            for i, name in enumerate(role_names)
            if (child := revision.roles.get(name)) is not None and drain[i] != 0
        )
        return changes, revision.name if blocked else ""
    return (), ""


def decide_rollout(
    target_revision: str, roles: Sequence[RoleTarget], children: Sequence[ChildView], *, advance: bool = False
) -> DsRolloutDecision:
    """One executor step for one slice that has LWS at a revision other than the target.

    Terminating children are ignored for old revisions (deletion is irreversible, so they are
    neither capacity to plan with nor a reason to keep rolling); at the target revision they count.

    ``advance``: the set scales during its rollout (``spec.scalingPolicy.duringRollout:
    AdvanceRollout``, planner.py); the new revision may then shrink, after every old drain of the
    step and before any growth.
    """
    target_children = group_by_revision(child for child in children if child.revision == target_revision).get(
        target_revision, {}
    )
    old_groups = group_by_revision(
        child for child in children if child.revision != target_revision and not child.terminating
    )
    if not old_groups:
        return DsRolloutDecision(kind="wait", message="no old revision left in this slice")

    # Back-fill missing baselines from the current Spec, then plan as if they had been there.
    backfill = tuple(
        (child.name, child.spec_replicas)
        for group in old_groups.values()
        for child in group.values()
        if child.initial_replicas is None
    )
    old = [
        RevisionGroup(name, {role: _with_baseline(child) for role, child in group.items()})
        for name, group in old_groups.items()
    ]

    missing = tuple((role.name, role.desired) for role in roles if role.name not in target_children)
    if missing or not target_children:
        # Plan only once the created objects have been observed, never on assumed state.
        return DsRolloutDecision(
            kind="create", create=missing, backfill=backfill, started=not target_children
        )

    sync_initial = tuple(
        (target_children[role.name].name, role.desired)
        for role in roles
        if target_children[role.name].initial_replicas != role.desired
    )

    spec_roles = {role.name: role for role in roles}
    removed = sorted({name for revision in old for name in revision.roles} - spec_roles.keys())
    role_names = [role.name for role in roles] + removed
    snapshot = _snapshot(role_names, spec_roles, old, target_children, advance)

    # Every later decision carries the baseline writes that precede it in the same reconcile.
    base = DsRolloutDecision(kind="wait", backfill=backfill, sync_initial=sync_initial)

    if is_spec_complete(snapshot):
        if not is_ready_complete(snapshot):
            return replace(base, kind="wait", message="waiting for the target revision to become ready")
        return replace(base, kind="complete", message=c.MSG_ROLLING_UPDATE_COMPLETED % target_revision)

    active, whole = _revision_to_drain(old)
    parked: list[int] | None = None
    active_specs = [0] * len(role_names)
    draining = old
    if active is not None:
        parked = []
        for i, name in enumerate(role_names):
            child = active.roles.get(name)
            active_specs[i] = child.spec_replicas if child is not None else 0
            parked.append(snapshot[i].old_ready - committed_ready(child))
        draining = [active]

    step: Step | None
    if whole:
        # A revision serving nothing is retired at once, whatever the fractions say.
        step = Step(
            tuple(role.old_spec - spec for role, spec in zip(snapshot, active_specs, strict=True)),
            tuple(role.new_spec for role in snapshot),
        )
    else:
        step = next_step(snapshot, parked)
    if step is None:
        return replace(base, kind="wait", message="rolling update is waiting for readiness to change")

    new_targets = list(step.new)
    scale_down, blocked_revision = plan_scale_down(role_names, draining, snapshot, step, new_targets, parked)
    if blocked_revision:
        note = c.MSG_REVISION_DRAIN_BLOCKED % blocked_revision
        return replace(base, kind="blocked", message=note, step=step)

    def target_changes(grow: bool) -> tuple[ScaleChange, ...]:
        return tuple(
            ScaleChange(
                lws=child.name,
                role=role.name,
                revision=target_revision,
                replicas=new_targets[i],
                from_replicas=child.spec_replicas,
            )
            for i, role in enumerate(roles)
            if (child := target_children[role.name]).spec_replicas != new_targets[i]
            and (child.spec_replicas < new_targets[i]) == grow
        )

    # The target revision shrinks only while scaling during the rollout (planner.py).
    scale_down += target_changes(grow=False)
    scale_up = target_changes(grow=True)
    if not scale_down and not scale_up:
        return replace(base, kind="wait", message="the step moves no replica of this slice", step=step)
    return replace(base, kind="scale", scale_down=scale_down, scale_up=scale_up, step=step)


def _with_baseline(child: ChildView) -> ChildView:
    return (
        child if child.initial_replicas is not None else replace(child, initial_replicas=child.spec_replicas)
    )


# --------------------------------------------------------------------------------------------------
# simulation
# --------------------------------------------------------------------------------------------------
