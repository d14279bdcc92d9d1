"""Kubernetes 1.37 as it ships (feature gate MaxUnavailableStatefulSet on): the API server keeps the
leader StatefulSet's maxUnavailable, so the StatefulSet controller honours it and ours deletes no
leader pod itself (`core/rollout/leaderreplacement.py` finds nothing to do)."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.rollout.leaderreplacement import (
    emulation_note,
    ignores_max_unavailable,
    leader_replacements,
)
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS, STATEFULSETS
from tests.support.builders import NAME, LeaderWorkerSetBuilder
from tests.support.expect import events_with
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]


async def test_the_stored_leader_statefulset_keeps_max_unavailable(api: KubeClient, ns: str) -> None:
    lws = await api.create(
        LEADERWORKERSETS, LeaderWorkerSetBuilder(ns).replicas(4).size(2).max_unavailable(3).obj()
    )

    async def stored() -> dict[str, Any]:
        sts = await api.get_or_none(STATEFULSETS, ns, NAME)
        assert sts is not None, "no leader StatefulSet yet"
        return sts

    sts: dict[str, Any] = await eventually(stored)
    assert sts["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 3
    assert not ignores_max_unavailable(lws, sts)
    assert emulation_note(lws, sts) is None
    leaders = await api.list(PODS, ns, label_selector=f"{c.LABEL_WORKER_INDEX}=0")
    assert leader_replacements(lws, sts, leaders) == ()
    assert await events_with(api, ns, c.EVENT_MAX_UNAVAILABLE_EMULATED) == []
