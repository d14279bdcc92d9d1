"""Upstream main's typed `leaderWorkerTemplate.restartBackoff` against the real API server: it drives the
restart back-off of a crash-looping group, wins over our annotation (which is then reported overridden),
and an unusable value is reported rather than acted on. The test plays the StatefulSet controller, the
garbage collector and the kubelet; the LWS and pod controllers run in-process with the webhooks off (so
no defaulting: the values are written out, and a bad one reaches the controller)."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.setup import RegisteredControllers
from leaderworkerset.core.lifecycle.ledger import ledger_name
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import CONFIGMAPS, LEADERWORKERSETS, PODS
from tests.support import expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
# The field's base: long enough that the test's group is back and failing well inside it.
BASE = 8
Obj = dict[str, Any]


def _builder(ns: str) -> LeaderWorkerSetBuilder:
    return LeaderWorkerSetBuilder(ns).replicas(1).size(2).restart_backoff(BASE, 2 * BASE)


async def _create(api: KubeClient, lws: Obj) -> None:
    created = await api.create(LEADERWORKERSETS, lws)
    # The CRD keeps the field (an older schema would prune it and nothing below would wait).
    assert created["spec"]["leaderWorkerTemplate"].get("restartBackoff") == lws["spec"][
        "leaderWorkerTemplate"
    ].get("restartBackoff")
    await kubelet.leader_statefulset(api, lws["metadata"]["namespace"], NAME)


async def _start_group(api: KubeClient, ns: str) -> None:
    lws = await kubelet.get_lws(api, ns, NAME)
    leader = (await kubelet.create_leader_pods(api, lws, 0, 1))[0]
    await kubelet.create_worker_pods(api, lws, leader)


async def _ledger(api: KubeClient, ns: str) -> Obj:
    configmap = await api.get_or_none(CONFIGMAPS, ns, ledger_name(NAME))
    return {} if configmap is None else dict(configmap.get("data") or {})


async def _expect_entries(api: KubeClient, ns: str, count: int) -> list[Obj]:
    async def check() -> list[Obj]:
        entries = list(json.loads((await _ledger(api, ns)).get("entries") or "[]"))
        assert len(entries) == count, entries
        return entries

    return await eventually(check)


async def _crash_loop_to_the_second_failure(api: KubeClient, ns: str) -> tuple[Obj, Obj]:
    """The group fails, is recreated at once, comes back and fails again: the first recreation's
    entry and the wait's."""
    await _start_group(api, ns)
    await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")  # the first recreation is immediate
    await kubelet.finish_group_deletion(api, ns, 0, NAME)
    await _start_group(api, ns)
    await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
    first, waiting = await _expect_entries(api, ns, 2)
    return first, waiting


def _seconds(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def test_the_field_delays_the_second_recreation_of_a_crash_looping_group(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _create(api, _builder(ns).obj())
    first, waiting = await _crash_loop_to_the_second_failure(api, ns)
    assert (first["action"], waiting["action"], waiting["delaySeconds"]) == ("recreated", "backing-off", BASE)

    async def leader_kept() -> bool:
        pod = await api.get(PODS, ns, f"{NAME}-0")
        return pod["metadata"].get("deletionTimestamp") is None

    await consistently(leader_kept, duration=1.5)  # the wait was recorded: the positive sign
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
    _, _, recreated = await _expect_entries(api, ns, 3)
    assert (recreated["action"], recreated["delaySeconds"]) == ("recreated", BASE)
    elapsed = _seconds(recreated["time"]) - _seconds(first["time"])
    assert elapsed >= BASE, f"recreated {elapsed}s after the first recreation, before the {BASE}s delay"
    state = json.loads((await _ledger(api, ns))["backoff"])["0"]
    assert (state["streak"], state["source"]) == (2, "field")
    # Nothing to report of a usable field on its own.
    lws = await kubelet.get_lws(api, ns, NAME)
    types = {cond["type"] for cond in (lws.get("status") or {}).get("conditions") or []}
    assert not types & {ext.CONDITION_RESTART_BACKOFF_INVALID, ext.CONDITION_RESTART_BACKOFF_OVERRIDDEN}


async def test_with_the_annotation_too_the_field_applies_and_the_annotation_is_reported_overridden(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _create(api, _builder(ns).annotation(ext.ANNOTATION_RESTART_BACKOFF, "base=1s,cap=2s").obj())
    message = (
        f"annotation {ext.ANNOTATION_RESTART_BACKOFF} is overridden by "
        "spec.leaderWorkerTemplate.restartBackoff: the field's back-off applies and the annotation is ignored"
    )
    await expect.expect_condition(
        api, ns, ext.CONDITION_RESTART_BACKOFF_OVERRIDDEN, c.CONDITION_TRUE, message
    )
    await expect.expect_event(api, ns, ext.EVENT_RESTART_BACKOFF_OVERRIDDEN, message, "Warning")

    _, waiting = await _crash_loop_to_the_second_failure(api, ns)
    assert (waiting["action"], waiting["delaySeconds"]) == ("backing-off", BASE)  # the field's, not 1 s

    await kubelet.update_lws(api, ns, NAME, lambda lws: lws["metadata"]["annotations"].clear())
    await expect.expect_no_condition(api, ns, ext.CONDITION_RESTART_BACKOFF_OVERRIDDEN)


async def test_an_unusable_field_admitted_without_webhooks_is_reported_and_groups_recreate_at_once(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(2).restart_backoff(600, 300).obj())
    message = (
        "spec.leaderWorkerTemplate.restartBackoff ignored (base-above-cap): "
        "spec.leaderWorkerTemplate.restartBackoff.baseSeconds: baseSeconds must not be greater than "
        "capSeconds (got 600)"
    )
    await expect.expect_condition(api, ns, ext.CONDITION_RESTART_BACKOFF_INVALID, c.CONDITION_TRUE, message)
    await expect.expect_event(api, ns, ext.EVENT_INVALID_RESTART_BACKOFF, message, "Warning")
    first, second = await _crash_loop_to_the_second_failure(api, ns)
    assert [entry["action"] for entry in (first, second)] == ["recreated", "recreated"]
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
