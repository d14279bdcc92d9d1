"""DisaggregatedSet journeys on the full local cluster, `lws manager` as a separate process
(the scenarios upstream's test/e2e/disaggregatedset covers, written our way).

Real LWS controller, StatefulSets, scheduler and kwok-run pods: a DS is Available only when every
child LWS has its groups running. Rollouts are watched, not sampled: every state of every child
LWS the API server went through is checked against the capacity floor and the surge ceiling.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.api import upstreammain as um
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.nodes import TOPOLOGY_ZONE
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import (
    DISAGGREGATEDSETS,
    DS_ROLE_SCALERS,
    EVENTS,
    LEADERWORKERSETS,
    NODES,
    PODS,
    SERVICES,
)
from tests.integration.disaggregatedset.helpers import (
    DS,
    create,
    expect_ds_condition,
    expect_ds_event,
    live_children,
    revision_of,
    update_spec,
)
from tests.support import upstream
from tests.support.builders import DisaggregatedSetBuilder
from tests.support.cli import kubectl
from tests.support.expect import expect_ds_available
from tests.support.wait import LONG_TIMEOUT, eventually
from tests.support.watch import Watch

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
NEW_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.28"
NEWER_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.29"


def set_image(*roles: int, image: str = NEW_IMAGE) -> Any:
    def change(spec: Obj) -> None:
        for i in roles:
            spec["roles"][i]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0][
                "image"
            ] = image

    return change


class CapacityGuard:
    """Checks every observed state of the DS's children: per role, the ready groups over all
    revisions never fall below the floor and the groups asked for never exceed the ceiling.

    One dip is upstream v1.0's own decision and is told apart (`known_dips`): its drain coordinator
    retires a whole old revision when every role's *committed* Ready fits the safe drain, and a
    child still counting a terminating group (status.replicas > spec) commits none of its Ready
    groups — so the surviving Ready group goes too. Pinned in
    tests/unit/core/disaggregated/test_retire_under_pending_drain.py.
    """

    def __init__(self, floors: dict[str, int], ceilings: dict[str, int]) -> None:
        self.floors, self.ceilings = floors, ceilings
        self.observations = 0
        self.violations: list[str] = []
        self.known_dips: list[str] = []
        self.revisions_seen: set[str] = set()
        self.history: dict[str, list[tuple[int, int, int, int]]] = defaultdict(
            list
        )  # rv, spec, status, ready
        self.retired_pending: set[str] = set()  # roles whose child went to 0 while it counted a leaving group

    def _record(self, objects: dict[str, Obj]) -> None:
        for name, lws in objects.items():
            status = lws.get("status") or {}
            entry = (
                int(lws["metadata"]["resourceVersion"]),
                lws["spec"].get("replicas", 1),
                status.get("replicas", 0),
                status.get("readyReplicas", 0),
            )
            past = self.history[name]
            if past and past[-1][1] > 0 and entry[1] == 0:
                # Retired from spec n: did any state at spec n count a leaving group? The controller
                # may have planned on such a state from its cache even if it has moved on since.
                epoch = [e for e in reversed(past) if e[1] == past[-1][1]]
                if any(status > spec and ready > 0 for _, spec, status, ready in epoch):
                    self.retired_pending.add(lws["metadata"]["labels"][c.LABEL_DS_ROLE])
            if not past or past[-1] != entry:
                past.append(entry)

    def observe(self, objects: dict[str, Obj]) -> None:
        ready: dict[str, int] = defaultdict(int)
        asked: dict[str, int] = defaultdict(int)
        for lws in objects.values():
            labels = lws["metadata"].get("labels") or {}
            if labels.get(c.LABEL_DS_NAME) != DS:
                continue
            role = labels[c.LABEL_DS_ROLE]
            self.revisions_seen.add(labels[c.LABEL_DS_REVISION])
            ready[role] += (lws.get("status") or {}).get("readyReplicas", 0)
            if not lws["metadata"].get("deletionTimestamp"):
                asked[role] += lws["spec"].get("replicas", 1)
        self.observations += 1
        self._record(objects)
        for role, floor in self.floors.items():
            if ready[role] < floor:
                note = f"#{self.observations}: {role} ready {ready[role]} < floor {floor}"
                (self.known_dips if role in self.retired_pending else self.violations).append(note)
            if asked[role] > self.ceilings[role]:
                self.violations.append(
                    f"#{self.observations}: {role} asks {asked[role]} > {self.ceilings[role]}"
                )


def three_roles(ns: str) -> DisaggregatedSetBuilder:
    return DisaggregatedSetBuilder(ns).role("prefill", 3, size=2).role("decode", 2).role("encode", 1)


async def test_two_roles_become_available_and_scale(api: KubeClient, ns: str) -> None:
    ds = await create(api, DisaggregatedSetBuilder(ns).role("prefill", 2, size=2).role("decode", 1).obj())
    await expect_ds_available(api, ns, {"prefill": 2, "decode": 1})
    rev = revision_of(ds)
    for role in ("prefill", "decode"):
        assert await api.get_or_none(SERVICES, ns, f"{DS}-0-{rev}-{role}-prv") is not None
    # The DS identity reaches every container of every pod, leaders and workers alike.
    pods = await api.list(PODS, ns, label_selector=c.LABEL_DS_NAME)
    assert len(pods) == 2 * 2 + 1
    for pod in pods:
        labels = pod["metadata"]["labels"]
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env[c.ENV_DISAGGREGATEDSET_NAME] == DS
        assert env[c.ENV_DISAGGREGATEDSET_ROLE] == labels[c.LABEL_DS_ROLE]
        assert env[c.ENV_DISAGGREGATEDSET_SLICE] == "0"
        assert env[c.ENV_DISAGGREGATEDSET_REVISION] == rev
        assert env[c.ENV_LWS_WORKER_INDEX] == labels[c.LABEL_WORKER_INDEX]  # the LWS variables too
    await update_spec(api, ns, lambda spec: spec["roles"][1]["spec"].update(replicas=3))
    await expect_ds_available(api, ns, {"prefill": 2, "decode": 3})
    assert set(await live_children(api, ns)) == {f"{DS}-0-{rev}-prefill", f"{DS}-0-{rev}-decode"}


@pytest.mark.parametrize(
    ("roles_changed", "images"),
    [
        pytest.param((0,), (NEW_IMAGE,), id="one role"),
        pytest.param((0, 1, 2), (NEW_IMAGE,), id="all roles"),
        pytest.param((0, 1, 2), (NEW_IMAGE, NEWER_IMAGE), id="interrupted by a second update"),
    ],
)
async def test_rolling_update_holds_every_roles_capacity_floor(
    api: KubeClient, ns: str, roles_changed: tuple[int, ...], images: tuple[str, ...]
) -> None:
    want = {"prefill": 3, "decode": 2, "encode": 1}
    ds = await create(api, three_roles(ns).obj())
    await expect_ds_available(api, ns, want)
    old = revision_of(ds)
    # Default budget (maxSurge 1, maxUnavailable 0): the floor is the full count, one surge group.
    guard = CapacityGuard(floors=dict(want), ceilings={role: n + 1 for role, n in want.items()})
    async with Watch(api, LEADERWORKERSETS, ns, guard.observe):
        for image in images:
            updated = await update_spec(api, ns, set_image(*roles_changed, image=image))
            await expect_ds_event(
                api,
                ns,
                c.EVENT_ROLLING_UPDATE_STARTED,
                f"Started rolling update to revision {revision_of(updated)}",
            )
        new = revision_of(updated)
        await expect_ds_event(
            api, ns, c.EVENT_ROLLING_UPDATE_COMPLETED, f"Completed rolling update to revision {new}"
        )
        await expect_ds_available(api, ns, want)

        async def only_new() -> bool:
            revisions = {
                lws["metadata"]["labels"][c.LABEL_DS_REVISION]
                for lws in (await live_children(api, ns)).values()
            }
            assert revisions == {new}, f"revisions {revisions}"
            return True

        await eventually(only_new, timeout=LONG_TIMEOUT)
    assert guard.observations > 10, f"only {guard.observations} states observed"
    if guard.known_dips:
        print(f"upstream's retire-under-pending-drain dip seen: {guard.known_dips}")
    assert old in guard.revisions_seen
    assert new in guard.revisions_seen
    if guard.violations:
        history = "\n".join(f"{name}: {entries}" for name, entries in sorted(guard.history.items()))
        recreated = [
            e.get("note") for e in await api.list(EVENTS, ns) if e.get("reason") == c.EVENT_RECREATE_GROUP
        ]
        details = f"{history}\nRecreateGroup events: {recreated}\nknown upstream dips: {guard.known_dips}"
        raise AssertionError("\n".join(guard.violations[:20]) + "\n" + details)


async def test_a_target_lowered_mid_rollout_applies_at_once_and_keeps_the_lower_floor(
    api: KubeClient, ns: str
) -> None:
    """spec.scalingPolicy.duringRollout: AdvanceRollout (docs/disaggregatedset.md): prefill drops from
    3 to 1 right after an image rollout of every role starts; the rollout completes at exactly the
    new targets without any role's Ready groups falling below its (lower) target."""
    ds = three_roles(ns).obj()
    ds["spec"]["scalingPolicy"] = {"duringRollout": um.SCALING_ADVANCE_ROLLOUT}
    ds = await create(api, ds)
    before = {"prefill": 3, "decode": 2, "encode": 1}
    await expect_ds_available(api, ns, before)
    want = {**before, "prefill": 1}
    guard = CapacityGuard(floors=dict(want), ceilings={role: n + 1 for role, n in before.items()})
    async with Watch(api, LEADERWORKERSETS, ns, guard.observe):
        updated = await update_spec(api, ns, set_image(0, 1, 2))
        new = revision_of(updated)
        await expect_ds_event(
            api, ns, c.EVENT_ROLLING_UPDATE_STARTED, f"Started rolling update to revision {new}"
        )
        await update_spec(api, ns, lambda spec: spec["roles"][0]["spec"].update(replicas=1))
        await expect_ds_event(
            api, ns, c.EVENT_ROLLING_UPDATE_COMPLETED, f"Completed rolling update to revision {new}"
        )
        await expect_ds_available(api, ns, want)
    children = await live_children(api, ns)
    assert {name: lws["spec"]["replicas"] for name, lws in children.items()} == {
        f"{DS}-0-{new}-{role}": n for role, n in want.items()
    }
    assert guard.observations > 10, f"only {guard.observations} states observed"
    assert guard.violations == [], "\n".join(guard.violations[:20])


async def test_slices_are_copies_and_scale_down_removes_one(api: KubeClient, ns: str) -> None:
    ds = await create(api, DisaggregatedSetBuilder(ns).role("prefill", 1).role("decode", 1).slices(2).obj())
    await expect_ds_available(api, ns, {"prefill": 1, "decode": 1}, slices=2)
    rev = revision_of(ds)
    await update_spec(api, ns, lambda spec: spec.update(slices=1))
    await expect_ds_available(api, ns, {"prefill": 1, "decode": 1}, slices=1)

    async def slice_one_gone() -> bool:
        names = set((await live_children(api, ns)).keys())
        assert names == {f"{DS}-0-{rev}-prefill", f"{DS}-0-{rev}-decode"}, names
        return True

    await eventually(slice_one_gone, timeout=LONG_TIMEOUT)


async def test_external_role_is_scaled_with_kubectl_and_an_hpa_like_scale_write(
    api: KubeClient, ns: str, full_cluster: LocalCluster
) -> None:
    body = DisaggregatedSetBuilder(ns).role("prefill", 2).role("decode", None).external("decode").obj()
    await create(api, body)
    await expect_ds_available(api, ns, {"prefill": 2, "decode": 1})  # a fresh External role seeds 1
    await kubectl(full_cluster, "-n", ns, "scale", f"dsrs/{DS}-decode", "--replicas=3")
    await expect_ds_available(api, ns, {"prefill": 2, "decode": 3})

    async def scaler_observes() -> bool:
        scale = await api.get(DS_ROLE_SCALERS, ns, f"{DS}-decode/scale")
        assert (scale["spec"]["replicas"], scale["status"].get("replicas")) == (3, 3), scale
        return True

    await eventually(scaler_observes)
    # What an HPA does: write spec.replicas through the /scale subresource.
    await api.merge_patch(DS_ROLE_SCALERS, ns, f"{DS}-decode", {"spec": {"replicas": 1}}, subresource="scale")
    await expect_ds_available(api, ns, {"prefill": 2, "decode": 1})


async def test_kubectl_scale_right_after_recreating_a_set_of_the_same_name(
    api: KubeClient, ns: str, full_cluster: LocalCluster
) -> None:
    # Upstream's hpa_test.go, in its order: a DS with an External prefill role (`replicas: 0`) is
    # deleted as its CleanupDeployment does (the DS, then its LWS, pods and Services; not the
    # scaler), the next test creates it again and scales `dsrs/<ds>-prefill` as soon as that name
    # exists: while the garbage collector has not removed it yet, that is the old set's scaler.
    body = DisaggregatedSetBuilder(ns).role("prefill", 0).role("decode", 1).external("prefill").obj()

    async def scaler_exists() -> bool:
        assert await api.get_or_none(DS_ROLE_SCALERS, ns, f"{DS}-prefill") is not None
        return True

    await create(api, body)
    await eventually(scaler_exists)
    await kubectl(full_cluster, "-n", ns, "delete", "disaggregatedset", DS, "--timeout=30s")
    selector = f"{c.LABEL_DS_NAME}={DS}"
    await kubectl(full_cluster, "-n", ns, "delete", "lws", "-l", selector, "--timeout=30s")
    await kubectl(full_cluster, "-n", ns, "delete", "pods", "-l", selector, "--grace-period=0", "--force")
    await kubectl(full_cluster, "-n", ns, "delete", "svc", "-l", selector)
    await create(api, body)
    await eventually(scaler_exists)
    await kubectl(full_cluster, "-n", ns, "scale", f"dsrs/{DS}-prefill", "--replicas=3")
    await expect_ds_available(api, ns, {"prefill": 3, "decode": 1})


async def test_deleting_the_set_removes_its_children(api: KubeClient, ns: str) -> None:
    await create(api, DisaggregatedSetBuilder(ns).role("prefill", 1).role("decode", 1).obj())
    await expect_ds_available(api, ns, {"prefill": 1, "decode": 1})
    await api.delete(DISAGGREGATEDSETS, ns, DS, propagation="Foreground")

    async def all_gone() -> bool:
        assert await api.get_or_none(DISAGGREGATEDSETS, ns, DS) is None, "DS still there"
        left = await api.list(LEADERWORKERSETS, ns)
        assert left == [], f"children left: {[x['metadata']['name'] for x in left]}"
        return True

    await eventually(all_gone, timeout=LONG_TIMEOUT)


async def test_exclusive_slice_placement_gives_each_slice_its_own_zone(api: KubeClient, ns: str) -> None:
    body = (
        DisaggregatedSetBuilder(ns)
        .role("prefill", 2, size=2)
        .role("decode", 1)
        .slices(2)
        .placement(c.PLACEMENT_EXCLUSIVE_SLICE, TOPOLOGY_ZONE)
        .obj()
    )
    await create(api, body)
    await expect_ds_available(api, ns, {"prefill": 2, "decode": 1}, slices=2)
    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"][TOPOLOGY_ZONE] for n in await api.list(NODES)}
    pods = await api.list(PODS, ns, label_selector=c.LABEL_DS_NAME)
    zones: dict[str, set[str]] = defaultdict(set)
    for pod in pods:
        zones[pod["metadata"]["labels"][c.LABEL_DS_SLICE]].add(zone_of[pod["spec"]["nodeName"]])
    assert len(pods) == 2 * (2 * 2 + 1), f"{len(pods)} pods"
    assert all(len(z) == 1 for z in zones.values()), f"a slice spans zones: {dict(zones)}"
    assert zones["0"] != zones["1"], f"slices share a zone: {dict(zones)}"


# ----- upstream samples -----------------------------------------------------------------------------
def samples() -> list[Any]:
    cases = [
        pytest.param(doc, id=f"{path.name}:{doc['metadata']['name']}")
        for path in upstream.files("samples")
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") == c.DS_KIND
    ]
    return upstream.params(cases, minimum=2, what="DisaggregatedSet samples")


@pytest.mark.parametrize("sample", samples())
async def test_upstream_sample_reaches_available(api: KubeClient, ns: str, sample: Any) -> None:
    upstream.check_case(sample)
    ds = copy.deepcopy(sample)
    ds["metadata"]["namespace"] = ns  # the only change: a fresh namespace
    name = ds["metadata"]["name"]
    await create(api, ds)
    want = {role["name"]: role["spec"].get("replicas", 1) for role in ds["spec"]["roles"]}
    await expect_ds_available(api, ns, want, name=name, slices=ds["spec"].get("slices", 1))
    await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY, ds=name)
