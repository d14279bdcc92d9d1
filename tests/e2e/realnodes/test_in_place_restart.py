"""In-place group restart on real kubelets (docs/in-place-restart.md): a worker process that exits
restarts every container of its group where it stands — same pods, nodes and IPs, the group Ready again,
no pod rescheduled, the failure counted once — where a set without the annotation recreates the group.

The durations (worker exit → group Ready again, each way) and the agent's memory are printed for the
docs (`-s`), never asserted: timing is not a pass/fail criterion here."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from tests.e2e.realnodes.test_failures import group_zero, ledger, ready_group
from tests.support.objects import is_ready, uid
from tests.support.realnodes import pod_http, probe_lws
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

# one cluster with real nodes per machine (the bridge lws0, conftest.py)
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("realnodes")]

SIZE = 3
Obj = dict[str, Any]


def _set(ns: str, name: str, *, in_place: bool) -> Obj:
    lws = probe_lws(ns, name, replicas=1, size=SIZE)
    lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] = c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART
    if in_place:
        lws["metadata"].setdefault("annotations", {})[ext.ANNOTATION_RESTART_STRATEGY] = (
            inplacerestart.IN_PLACE
        )
    return lws


def _where(group: dict[str, Obj]) -> dict[str, tuple[str, str, str]]:
    return {i: (uid(p), p["spec"]["nodeName"], p["status"]["podIP"]) for i, p in group.items()}


def _restarts(pod: Obj) -> int:
    return inplacerestart.pod_restarts(pod)


def _agent_rss_kib() -> list[int]:
    """Resident memory of every running agent process on this machine (the nodes share its kernel)."""
    found = subprocess.run(
        ["pgrep", "-f", "leaderworkerset.agent"], capture_output=True, text=True, check=False
    )
    sizes = []
    for pid in found.stdout.split():
        status = Path(f"/proc/{pid}/status")
        for line in status.read_text().splitlines() if status.exists() else []:
            if line.startswith("VmRSS:"):
                sizes.append(int(line.split()[1]))
    return sizes


async def test_a_worker_failure_restarts_every_container_of_its_group_in_place(
    real_api: KubeClient, real_ns: str
) -> None:
    await real_api.create(LEADERWORKERSETS, _set(real_ns, "inplace", in_place=True))
    before = await ready_group(real_api, real_ns, "inplace", SIZE)
    for pod in before.values():  # the pod webhook equipped every pod
        assert inplacerestart.equipped(pod)
        assert pod["spec"]["initContainers"][0]["name"] == inplacerestart.AGENT_CONTAINER
    rss = _agent_rss_kib()

    started, wall = time.monotonic(), time.time()
    pod_http(before["1"]["status"]["podIP"], "/exit", method="POST")

    async def restarted_and_ready() -> dict[str, Obj] | None:
        group = await group_zero(real_api, real_ns, "inplace")
        done = len(group) == SIZE and all(_restarts(p) >= 1 and is_ready(p) for p in group.values())
        return group if done else None

    after = await eventually(restarted_and_ready, timeout=LONG_TIMEOUT)
    elapsed = time.monotonic() - started
    assert after is not None
    assert _where(after) == _where(before)  # same pods, same nodes, same IPs: nothing rescheduled
    counts = {i: _restarts(p) for i, p in after.items()}
    # The leader restarted once (ordered). Each worker restarted once (worker 1 for its failure, worker 2
    # ordered) and maybe once more when its leader restarted under it and it exited (absorbed: part of
    # the group restart, not a failure).
    assert counts["0"] == 1
    assert counts["1"] in (1, 2)
    assert counts["2"] in (1, 2)

    async def counted_once() -> (
        inplacerestart.InPlaceRestartState
    ):  # the leader's books: one restart, the extra exits absorbed
        state = inplacerestart.in_place_restart_state((await group_zero(real_api, real_ns, "inplace"))["0"])
        assert (state.epoch, state.streak, state.absorbed) == (1, 1, sum(counts.values()) - SIZE), state
        return state

    decided = (await eventually(counted_once)).last
    entries = await ledger(real_api, real_ns, "inplace")
    assert [(e["action"], e["pod"]) for e in entries] == [("restarted-in-place", "inplace-0-1")]
    # The leader and the other worker really reconnected: the leader counts its workers again.
    assert len(pod_http(after["0"]["status"]["podIP"], "/workers")) == SIZE - 1

    async def once() -> bool:  # the ordered restarts are not failures: nothing more happens
        group = await group_zero(real_api, real_ns, "inplace")
        return (
            _where(group) == _where(before)
            and {i: _restarts(p) for i, p in group.items()} == counts
            and len(await ledger(real_api, real_ns, "inplace")) == 1
        )

    await consistently(once, duration=5)
    print(
        json.dumps(
            {
                "in_place_seconds": round(elapsed, 2),
                "epoch_written_after_seconds": round((decided or wall) - wall, 2),
                "rescheduled": 0,
                "restarts": counts,
                "agent_rss_kib": rss,
            }
        )
    )


async def test_the_same_failure_recreates_the_group_without_the_annotation(
    real_api: KubeClient, real_ns: str
) -> None:
    await real_api.create(LEADERWORKERSETS, _set(real_ns, "recreate", in_place=False))
    before = await ready_group(real_api, real_ns, "recreate", SIZE)
    assert not any(inplacerestart.equipped(p) for p in before.values())

    started = time.monotonic()
    pod_http(before["1"]["status"]["podIP"], "/exit", method="POST")

    async def recreated() -> dict[str, Obj] | None:
        group = await group_zero(real_api, real_ns, "recreate")
        fresh = len(group) == SIZE and all(uid(p) != uid(before[i]) for i, p in group.items() if i in before)
        return group if fresh and all(is_ready(p) for p in group.values()) else None

    after = await eventually(recreated, timeout=LONG_TIMEOUT)
    elapsed = time.monotonic() - started
    assert after is not None
    rescheduled = sum(1 for i, p in after.items() if uid(p) != uid(before[i]))
    assert rescheduled == SIZE
    print(json.dumps({"recreate_seconds": round(elapsed, 2), "rescheduled": rescheduled}))
