"""One chaos run: record a namespace, deploy the mix, change it under a fault, wait until it settles,
and return the recorded stream and the fault's figures.

    changes, figures = await run_mix(api, ns, fault)

``fault(recorder, change)`` injects whatever the test is about and must call ``change()`` (which
applies the mix's rollout and scale) at the moment it chooses; it returns its figures.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import NAMESPACES
from tests.chaos.faults import invariants as inv
from tests.chaos.faults import workload
from tests.chaos.faults.recorder import Recorder
from tests.support.wait import consistently

Change = Callable[[], Awaitable[None]]
Fault = Callable[[Recorder, Change], Awaitable[dict[str, Any]]]


async def new_namespace(api: KubeClient, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def all_violations(changes: list[inv.Change]) -> dict[str, list[str]]:
    """Every invariant of the suite over one recorded run; empty when all held."""
    found = {
        "pod of a healthy group deleted": inv.unjustified_pod_deletions(changes),
        "delete of an object that did not exist": inv.deletes_of_unknown_objects(changes),
        "failed group not recreated exactly once": inv.recreations_after_failures(changes),
        "ControllerRevision created twice": inv.duplicate_revisions(changes),
        "rollout step beyond maxSurge/maxUnavailable": inv.budget_violations(changes, workload.BUDGETS),
    }
    return {what: violations for what, violations in found.items() if violations}


async def no_fault(recorder: Recorder, change: Change) -> dict[str, Any]:
    del recorder
    await change()
    return {}


DUMP_ENV = "LWS_CHAOS_DUMP"


def dump(ns: str, changes: list[inv.Change]) -> None:
    """With LWS_CHAOS_DUMP=<dir>, write a run's recorded stream there (one JSON change a line)."""
    if directory := os.environ.get(DUMP_ENV):
        path = Path(directory) / f"{ns}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(dataclasses.asdict(ch), default=dict) + "\n" for ch in changes))


async def run_mix(
    api: KubeClient, ns: str, fault: Fault = no_fault
) -> tuple[list[inv.Change], dict[str, Any]]:
    recorder = Recorder(api, ns)
    try:
        return await _run_mix(api, ns, fault, recorder)
    finally:
        dump(ns, recorder.snapshot())


async def _run_mix(
    api: KubeClient, ns: str, fault: Fault, recorder: Recorder
) -> tuple[list[inv.Change], dict[str, Any]]:
    async with recorder:
        await workload.create_mix(api, ns)
        await workload.expect_mix_settled(api, ns, final=False)
        started = time.monotonic()
        figures = await fault(recorder, lambda: workload.change_mix(api, ns))
        await workload.expect_mix_settled(api, ns, final=True)
        figures["converged_seconds"] = round(time.monotonic() - started, 1)

        def still_clean() -> bool:
            found = all_violations(recorder.snapshot())
            assert not found, found
            return True

        # The settled state must stay settled: no late delete of a group that was done.
        await consistently(still_clean, interval=0.5)
        figures.update(
            changes=len(recorder.changes), watch_gaps=recorder.gaps, watch_resumes=recorder.resumes
        )
        return recorder.snapshot(), figures


def expect_same_end_state(changes: list[inv.Change], baseline: dict[str, Any]) -> dict[str, Any]:
    """The run ended where the run without faults ended; returns the sizes for the figures."""
    final = inv.final_state(changes)
    assert len(final) == len(workload.mix_sets()) + len(workload.DS_ROLES), sorted(final)
    assert final == baseline
    return {"sets": len(final), "pods": sum(len(s["pods"]) for s in final.values())}
