"""Whether the cluster supports RestartAllContainers, asked of real API servers with a server-side
dry-run (nothing stored): Kubernetes 1.37 with its defaults keeps the rule; with the action's gate off
the API server refuses it, and with container restart rules off it drops them. A pod equipped by the
webhook is one the API server stores as is."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import PODS, STATEFULSETS
from leaderworkerset.webhooks.inplacerestart import PROBE_NAMESPACE, RestartAllContainersProbe
from tests.support import clusters
from tests.support.builders.probe import probe_pod_spec

pytestmark = [pytest.mark.cluster]


async def test_the_default_cluster_supports_it_and_nothing_is_stored(webhook_client: KubeClient) -> None:
    api = webhook_client
    probe = RestartAllContainersProbe()
    answers: list[str | None] = []
    probe.on_change(lambda: answers.append(probe.answer()))
    assert probe() is not None  # not asked yet: admission makes no promise
    assert probe.answer() is None  # nor does the sets' condition say the cluster lacks it
    assert await probe.refresh(api) is None
    assert probe() is None
    assert answers == [None]  # the first answer wakes the controllers' InPlace sets
    await probe.refresh(api)
    assert answers == [None]  # the same answer does not
    assert await api.list(STATEFULSETS, PROBE_NAMESPACE) == []


async def test_an_equipped_pod_is_stored_with_its_rules_and_agent(
    webhook_client: KubeClient, namespace: str
) -> None:
    api, ns = webhook_client, namespace
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": ns},
        "spec": probe_pod_spec(),
    }
    inplacerestart.equip_pod(pod, "lws.local/lws-python:v0")
    stored = await api.create(PODS, pod)
    assert inplacerestart.equipped(stored)
    agent, *_ = stored["spec"]["initContainers"]
    assert agent["name"] == inplacerestart.AGENT_CONTAINER
    assert agent["restartPolicyRules"] == pod["spec"]["initContainers"][0]["restartPolicyRules"]
    for container in stored["spec"]["containers"]:
        assert container["restartPolicyRules"][-1]["action"] == "RestartAllContainers"


# RestartAllContainersOnContainerExits needs ContainerRestartRules: turning the latter off alone is refused.
GATES_OFF = {
    "RestartAllContainersOnContainerExits": "RestartAllContainersOnContainerExits=false",
    "ContainerRestartRules": "ContainerRestartRules=false,RestartAllContainersOnContainerExits=false",
}


@pytest.fixture(scope="module", params=sorted(GATES_OFF))
def gate_off_cluster(request: pytest.FixtureRequest) -> Iterator[tuple[str, LocalCluster]]:
    options = ClusterOptions(shape="apiserver", feature_gates=GATES_OFF[request.param], die_with_parent=True)
    for cluster in clusters.own(request, f"gate-off-{request.param.lower()[:12]}", options):
        yield request.param, cluster


@pytest.fixture
async def gate_off(gate_off_cluster: tuple[str, LocalCluster]) -> AsyncIterator[tuple[str, KubeClient]]:
    gate, cluster = gate_off_cluster
    client = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig)))
    yield gate, client
    await client.close()


async def test_a_cluster_with_a_gate_off_is_unsupported_with_the_servers_words(
    gate_off: tuple[str, KubeClient],
) -> None:
    gate, client = gate_off
    probe = RestartAllContainersProbe()
    answers: list[str | None] = []
    probe.on_change(lambda: answers.append(probe.answer()))
    reason = await probe.refresh(client)
    assert answers == [reason]
    if gate == "ContainerRestartRules":
        assert reason == "the API server drops container restart rules"
    else:
        assert reason is not None
        assert reason.startswith("the API server refuses it: 422")
        assert "RestartAllContainers" in reason
