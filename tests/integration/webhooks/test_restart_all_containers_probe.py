"""Whether the cluster supports RestartAllContainers, asked of real API servers with a server-side
dry-run (nothing stored): Kubernetes 1.37 with its defaults keeps the rule; with the action's gate off
the API server refuses it, and with container restart rules off it drops them. A pod equipped by the
webhook is one the API server stores as is."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator

import jsonpatch
import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.leaderworkerset.inplacerestart import InPlaceRestartSupport
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import PODS, STATEFULSETS
from leaderworkerset.webhooks.admission import WebhookOptions, review
from leaderworkerset.webhooks.inplacerestart import PROBE_NAMESPACE, RestartAllContainersProbe
from tests.support import clusters
from tests.support.builders import lws, worker
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


async def test_where_a_gate_is_off_the_pod_webhook_equips_no_pod_and_the_set_is_told_why(
    gate_off: tuple[str, KubeClient],
) -> None:
    """A set admitted with `restart-strategy: InPlace` before the cluster lost the rule: its new pods
    are admitted without the rule (which that API server refuses or strips), as stored pods, and the
    controllers, reading the same probe, put the InPlaceRestartUnavailable condition on the set."""
    _, client = gate_off
    probe = RestartAllContainersProbe()
    assert await probe.refresh(client) is not None
    original = worker("test-sample-1-1").obj()
    original["metadata"]["namespace"] = PROBE_NAMESPACE
    options = WebhookOptions(
        token_source=lambda: "t",
        set_annotations=lambda namespace, name: {ext.ANNOTATION_RESTART_STRATEGY: inplacerestart.IN_PLACE},
        restart_agent_image="lws.local/lws-python:v0",
        restart_all_containers=probe,
    )
    response = review(
        c.WEBHOOK_PATH_MUTATE_POD,
        {"request": {"uid": "1", "operation": "CREATE", "object": original}},
        options,
    )["response"]
    admitted = jsonpatch.apply_patch(original, json.loads(base64.b64decode(response["patch"])))
    assert not inplacerestart.equipped(admitted)
    stored = await client.request(
        "POST", PODS.collection_path(PROBE_NAMESPACE), body=admitted, params={"dryRun": "All"}
    )
    assert stored["metadata"]["name"] == "test-sample-1-1"

    support = InPlaceRestartSupport(unsupported=probe.answer, agent_image="lws.local/lws-python:v0")
    in_place = lws().restart_policy(c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART)
    in_place.annotation(ext.ANNOTATION_RESTART_STRATEGY, inplacerestart.IN_PLACE)
    unavailable = inplacerestart.unavailable(in_place.obj(), support.prerequisites())
    assert unavailable is not None
    assert unavailable[0] == ext.REASON_RESTART_ALL_CONTAINERS_UNSUPPORTED
