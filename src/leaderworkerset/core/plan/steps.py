"""`lws plan`, what every plan shares: the plan and its steps, the capacity left, the time each
step may take, and the surge's accelerators against the nodes' free ones."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from leaderworkerset.core.objects import Obj, metadata
from leaderworkerset.core.scheduling.accelerators import Accelerators

ChangeKind = Literal["rollout", "scale only", "no rollout", "no change"]


@dataclass(frozen=True)
class PlanStep:
    """One step: what goes down and comes up, the capacity left right after, and the surge.

    `down`/`up` name groups (LWS: ordinals) or `role +-count` (DS). `capacity` is the
    ready replicas per role as a percent of the target while this step's new groups are not
    ready yet; `updated`/`old` count groups on the new and old revision (LWS: the leader pods).
    """

    down: tuple[str, ...]
    up: tuple[str, ...]
    capacity: tuple[tuple[str, int], ...]
    extra_accelerators: Mapping[str, int]
    updated: int = 0
    old: int = 0
    waits_for_ready: bool = True
    eta_seconds: float | None = None


@dataclass(frozen=True)
class Plan:
    kind: str
    namespace: str
    name: str
    change: ChangeKind
    summary: str
    steps: tuple[PlanStep, ...] = ()
    peak_extra_accelerators: Mapping[str, int] = field(default_factory=dict)
    free_accelerators: Mapping[str, int] | None = None
    time_to_ready_seconds: float | None = None
    warnings: tuple[str, ...] = ()
    # Facts of the cluster that shape the rollout, printed as they are (not warnings).
    notes: tuple[str, ...] = ()

    @property
    def eta_seconds(self) -> float | None:
        return self.steps[-1].eta_seconds if self.steps else 0.0


def empty_plan(kind: str, live: Obj, free: Mapping[str, int] | None, time_to_ready: float | None) -> Plan:
    """The plan of an object before any step is known: "no change"."""
    meta = metadata(live)
    return Plan(
        kind=kind,
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        change="no change",
        summary="",
        free_accelerators=free,
        time_to_ready_seconds=time_to_ready,
    )


def capacity_pct(ready: int, target: int) -> int:
    return 100 if target <= 0 else (100 * ready) // target


def _etas(waits: Sequence[bool], time_to_ready: float | None) -> list[float | None]:
    if time_to_ready is None:
        return [None] * len(waits)
    total, result = 0.0, list[float | None]()
    for wait in waits:
        total += time_to_ready if wait else 0.0
        result.append(total)
    return result


def surge_warnings(peak: Mapping[str, int], free: Mapping[str, int] | None) -> list[str]:
    """A warning per accelerator the plan's peak (surge or growth) needs beyond the nodes' free
    allocatable."""
    if free is None:
        return []
    return [
        f"needs {count} more {name} than the groups hold now, the eligible nodes have "
        f"{max(0, free.get(name, 0))} free"
        for name, count in sorted(peak.items())
        if count > 0 and count > free.get(name, 0)
    ]


def with_spec(live: Obj, new: Obj) -> dict[str, Any]:
    """The live object carrying the new spec and the new file's annotations (our opt-in features
    are annotations, e.g. surge-fallback-seconds): what the controller reads after the apply."""
    result = {**copy.deepcopy(dict(live)), "spec": copy.deepcopy(new.get("spec") or {})}
    added = metadata(new).get("annotations") or {}
    if added:
        meta = result["metadata"] = dict(result.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **copy.deepcopy(added)}
    return result


def finish_plan(plan: Plan, steps: list[PlanStep]) -> Plan:
    etas = _etas([step.waits_for_ready for step in steps], plan.time_to_ready_seconds)
    timed = tuple(replace(step, eta_seconds=eta) for step, eta in zip(steps, etas, strict=True))
    peak: Accelerators = {}
    for step in timed:
        for name, count in step.extra_accelerators.items():
            if count > 0:  # a step that frees accelerators needs none
                peak[name] = max(peak.get(name, 0), count)
    warnings = (*plan.warnings, *surge_warnings(peak, plan.free_accelerators))
    return replace(plan, steps=timed, peak_extra_accelerators=peak, warnings=warnings)
