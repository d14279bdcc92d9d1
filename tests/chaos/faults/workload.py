"""The workload mix every fault test drives: four LeaderWorkerSets and a DisaggregatedSet, created,
then all changed at once (a new worker image everywhere, two of them scaled up too), so that faults
land mid-rollout and mid-scale.

* ``ordinal``   — Ordinal identity, the default budget (maxUnavailable 1), scaled up while rolling;
                  the set whose healthy groups get injected failures.
* ``hash``      — Hash identity (leaders in a Deployment), scaled up while rolling.
* ``surge``     — maxSurge 1, maxUnavailable 0: its budget is checked on every observed state.
* ``partition`` — partition 1: group 0 stays on the old revision; budget maxUnavailable 1.
* DisaggregatedSet ``ds`` — two roles, both rolled to the new image.

The opt-in features (docs/annotations.md) are on where they fit (`OPT_INS`), so every fault test runs them
too: capacity-aware surge on ``surge`` (the cluster has room, so it must never fall back), node
quarantine on ``ordinal`` (the set that takes the injected failures), group disruption budgets on
``hash`` and ``partition`` (no node is drained: the budgets are kept in step while everything rolls).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, LEADERWORKERSETS
from tests.chaos.faults import invariants as inv
from tests.chaos.sizes import pick
from tests.integration.disaggregatedset.helpers import update_spec
from tests.support.builders import DisaggregatedSetBuilder, LeaderWorkerSetBuilder
from tests.support.wait import LONG_TIMEOUT, eventually

Obj = dict[str, Any]
T = TypeVar("T")
NEW_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.28"
DS_NAME = "ds"
DS_ROLES = ("prefill", "decode")
FAILURE_TARGET = "ordinal"
WORKER_IMAGE = "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image"
# A deadline for a whole mix to converge on a busy 2-core machine (about 40 pods, two rollouts).
CONVERGE_TIMEOUT = 3 * LONG_TIMEOUT


@dataclass(frozen=True)
class Set:
    name: str
    replicas: int
    final_replicas: int
    partition: int = 0

    @property
    def final_updated(self) -> int:
        return self.final_replicas - self.partition


def mix_sets() -> tuple[Set, ...]:
    n = pick(ci=1, full=2)
    return (
        Set("ordinal", 3 * n, 4 * n),
        Set("hash", 2 * n, 3 * n),
        Set("surge", 3 * n, 3 * n),
        Set("partition", 3 * n, 3 * n, partition=1),
    )


BUDGETS = (inv.Budget("surge", max_surge=1, max_unavailable=0), inv.Budget("partition", 0, 1))
# The opt-in annotations each set carries (docs/annotations.md).
OPT_INS: dict[str, dict[str, str]] = {
    "surge": {ext.ANNOTATION_SURGE_FALLBACK_SECONDS: "60"},
    "ordinal": {ext.ANNOTATION_QUARANTINE_AFTER: "3/10m"},
    "hash": {ext.ANNOTATION_DISRUPTION_BUDGET: "1"},
    "partition": {ext.ANNOTATION_DISRUPTION_BUDGET: "50%"},
}


def lws_objects(ns: str) -> list[Obj]:
    sets = {s.name: s for s in mix_sets()}
    ordinal = LeaderWorkerSetBuilder(ns, "ordinal").replicas(sets["ordinal"].replicas).size(2).obj()
    hashed = LeaderWorkerSetBuilder(ns, "hash").replicas(sets["hash"].replicas).size(2).obj()
    hashed["spec"]["groupIdentity"] = c.GROUP_IDENTITY_HASH
    surge = (
        LeaderWorkerSetBuilder(ns, "surge")
        .replicas(sets["surge"].replicas)
        .size(2)
        .max_surge(1)
        .max_unavailable(0)
    ).obj()
    partition = (
        LeaderWorkerSetBuilder(ns, "partition")
        .replicas(sets["partition"].replicas)
        .size(2)
        .partition(sets["partition"].partition)
    ).obj()
    objects = [ordinal, hashed, surge, partition]
    for obj in objects:
        obj["metadata"].setdefault("annotations", {}).update(OPT_INS.get(obj["metadata"]["name"], {}))
    return objects


def ds_object(ns: str) -> Obj:
    builder = DisaggregatedSetBuilder(ns, DS_NAME)
    for role in DS_ROLES:
        builder = builder.role(role, replicas=pick(ci=1, full=2), size=2)
    return builder.obj()


async def create_mix(api: KubeClient, ns: str) -> None:
    for lws in lws_objects(ns):
        await api.create(LEADERWORKERSETS, lws, ns)
    await api.create(DISAGGREGATEDSETS, ds_object(ns), ns)


async def change_mix(api: KubeClient, ns: str) -> None:
    """Everything at once: a new worker image everywhere, ``ordinal`` and ``hash`` scaled up too."""
    for s in mix_sets():
        patch = [{"op": "replace", "path": WORKER_IMAGE, "value": NEW_IMAGE}]
        if s.final_replicas != s.replicas:
            patch.append({"op": "replace", "path": "/spec/replicas", "value": s.final_replicas})
        await api.json_patch(LEADERWORKERSETS, ns, s.name, patch)

    def new_image(spec: Obj) -> None:
        for role in spec["roles"]:
            role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = (
                NEW_IMAGE
            )

    await update_spec(api, ns, new_image, name=DS_NAME)


def transient(check: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
    """``check`` with the API server's passing faults read as "not yet" (an AssertionError, which
    `eventually` retries): a restarted server answers 429 while its caches refill, a cut connection
    raises a transport error."""

    @functools.wraps(check)
    async def wrapped() -> T:
        try:
            return await check()
        except ApiStatusError as err:
            if err.code in (429, 500, 503, 504):
                raise AssertionError(f"API server not serving yet: {err}") from err
            raise
        except (aiohttp.ClientError, TimeoutError) as err:
            raise AssertionError(f"API server unreachable: {err!r}") from err

    return wrapped


async def expect_lws_settled(api: KubeClient, ns: str, s: Set, *, final: bool) -> None:
    replicas, updated = (s.final_replicas, s.final_updated) if final else (s.replicas, s.replicas)

    async def check() -> bool:
        lws = await api.get(LEADERWORKERSETS, ns, s.name)
        status = lws.get("status") or {}
        assert status.get("observedGeneration") == lws["metadata"]["generation"], (
            f"{s.name}: status not current"
        )
        got = (status.get("replicas"), status.get("readyReplicas"), status.get("updatedReplicas"))
        assert got == (replicas, replicas, updated), f"{s.name}: replicas/ready/updated {got}"
        conditions = {x["type"]: x["status"] for x in status.get("conditions") or []}
        assert conditions.get(c.CONDITION_AVAILABLE) == c.CONDITION_TRUE, f"{s.name}: {conditions}"
        return True

    await eventually(transient(check), timeout=CONVERGE_TIMEOUT, interval=0.5)


async def expect_ds_settled(api: KubeClient, ns: str) -> None:
    """The DisaggregatedSet Available, every role's groups ready and on the current revision."""
    want = pick(ci=1, full=2)

    async def check() -> bool:
        ds = await api.get(DISAGGREGATEDSETS, ns, DS_NAME)
        status = ds.get("status") or {}
        assert status.get("observedGeneration") == ds["metadata"]["generation"], "DS status not current"
        conditions = {
            x["type"]: x.get("reason") for x in status.get("conditions") or [] if x["status"] == "True"
        }
        assert conditions.get(c.CONDITION_AVAILABLE) == c.REASON_ALL_ROLES_READY, (
            f"DS conditions {conditions}"
        )
        for role in status.get("roleStatuses") or []:
            counts = (role.get("replicas", 0), role.get("readyReplicas", 0), role.get("updatedReplicas", 0))
            assert counts == (want, want, want), f"DS role {role.get('name')}: {counts}"
        assert len(status.get("roleStatuses") or []) == len(DS_ROLES), status.get("roleStatuses")
        return True

    await eventually(transient(check), timeout=CONVERGE_TIMEOUT, interval=0.5)


async def expect_mix_settled(api: KubeClient, ns: str, *, final: bool) -> None:
    """Every set Available with all its groups ready (and, when ``final``, rolled as far as asked)."""
    for s in mix_sets():
        await expect_lws_settled(api, ns, s, final=final)
    await expect_ds_settled(api, ns)
