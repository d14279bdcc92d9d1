"""The contract LeaderWorkerSet exists for, on real kubelets: a worker process on another node resolves
$LWS_LEADER_ADDRESS through the headless Service and cluster DNS and reaches its leader, and the
variables it sees are the ones the API promises. The probe's leader is Ready only once every worker of
its group has connected, so "Available" here means the workers really found their leader."""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, LEADERWORKERSETS, PODS
from tests.support.builders.disaggregatedset import DisaggregatedSetBuilder
from tests.support.builders.probe import probe_pod_spec
from tests.support.expect import expect_ds_available
from tests.support.objects import is_ready, labels
from tests.support.realnodes import group_pods, lws_available, pod_http, probe_lws
from tests.support.wait import LONG_TIMEOUT, eventually

# one cluster with real nodes per machine (the bridge lws0, conftest.py)
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("realnodes")]


async def test_workers_find_their_leader_over_dns_across_nodes(real_api: KubeClient, real_ns: str) -> None:
    await real_api.create(LEADERWORKERSETS, probe_lws(real_ns, "probe", replicas=2, size=3))
    await eventually(lambda: lws_available(real_api, real_ns, "probe"), timeout=LONG_TIMEOUT)

    groups = await group_pods(real_api, real_ns, "probe")
    assert sorted(groups) == ["0", "1"]
    for index, pods in groups.items():
        by_worker = {labels(p)[c.LABEL_WORKER_INDEX]: p for p in pods}
        leader = by_worker.pop("0")
        assert {p["spec"]["nodeName"] for p in pods} == {"real-node-1", "real-node-2", "real-node-3"}, index
        reported = pod_http(leader["status"]["podIP"], "/workers")
        assert sorted(reported) == ["1", "2"], f"group {index}: workers connected to the leader: {reported}"
        address = f"{leader['metadata']['name']}.probe.{real_ns}"
        for worker_index, worker in by_worker.items():
            assert reported[worker_index] == {
                "HOSTNAME": worker["metadata"]["name"],
                c.ENV_LWS_LEADER_ADDRESS: address,
                c.ENV_LWS_GROUP_SIZE: "3",
                c.ENV_LWS_WORKER_INDEX: worker_index,
            }
        assert pod_http(leader["status"]["podIP"], "/env")[c.ENV_LWS_LEADER_ADDRESS] == address


async def test_a_group_whose_workers_cannot_reach_the_leader_is_not_ready(
    real_api: KubeClient, real_ns: str
) -> None:
    # The leader listens on another port than the one its workers dial: they resolve it, never reach it.
    lws = probe_lws(real_ns, "lost", replicas=1, size=2, leader_env={"PROBE_LEADER_PORT": "7071"})
    await real_api.create(LEADERWORKERSETS, lws)

    async def running_but_alone() -> bool:
        pods = (await group_pods(real_api, real_ns, "lost")).get("0", [])
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        leader = next((p for p in running if labels(p)[c.LABEL_WORKER_INDEX] == "0"), None)
        return (
            len(running) == 2 and leader is not None and pod_http(leader["status"]["podIP"], "/workers") == {}
        )

    await eventually(running_but_alone, timeout=LONG_TIMEOUT)
    pods = (await group_pods(real_api, real_ns, "lost"))["0"]
    assert not any(is_ready(p) for p in pods)
    assert not await lws_available(real_api, real_ns, "lost")


async def test_disaggregatedset_roles_find_their_leaders_and_see_their_variables(
    real_api: KubeClient, real_ns: str
) -> None:
    ds = (
        DisaggregatedSetBuilder(real_ns, "pd")
        .role("prefill", replicas=1, size=2)
        .role("decode", replicas=1, size=2)
        .role_pod_spec("prefill", probe_pod_spec())
        .role_pod_spec("decode", probe_pod_spec())
        .obj()
    )
    await real_api.create(DISAGGREGATEDSETS, ds)
    await expect_ds_available(real_api, real_ns, {"prefill": 1, "decode": 1}, name="pd")

    pods = await real_api.list(PODS, real_ns, label_selector=f"{c.LABEL_DS_NAME}=pd")
    assert len(pods) == 4
    for pod in pods:
        env = pod_http(pod["status"]["podIP"], "/env")
        pod_labels = labels(pod)
        assert {k: v for k, v in env.items() if k.startswith("DISAGGREGATEDSET_")} == {
            c.ENV_DISAGGREGATEDSET_NAME: "pd",
            c.ENV_DISAGGREGATEDSET_ROLE: pod_labels[c.LABEL_DS_ROLE],
            c.ENV_DISAGGREGATEDSET_SLICE: pod_labels[c.LABEL_DS_SLICE],
            c.ENV_DISAGGREGATEDSET_REVISION: pod_labels[c.LABEL_DS_REVISION],
        }, pod["metadata"]["name"]
    leaders = [p for p in pods if labels(p)[c.LABEL_WORKER_INDEX] == "0"]
    # Each role's leader holds its one worker: the roles' groups found their own leaders.
    assert [len(pod_http(p["status"]["podIP"], "/workers")) for p in leaders] == [1, 1]
