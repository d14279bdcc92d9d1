"""Our admission webhooks called by a real kube-apiserver: defaulting lands in the
stored object, denials reach the client with upstream's wording, pods are labelled on CREATE."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.groups import keys
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, LEADERWORKERSETS, PODS

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]


def lws(namespace: str, name: str = "sample", **spec: Any) -> Obj:
    body: Obj = {
        "leaderWorkerTemplate": {
            "size": 2,
            "workerTemplate": {"spec": {"containers": [{"name": "w", "image": "nginx"}]}},
        }
    }
    body.update(spec)
    return {
        "apiVersion": c.LWS_API_VERSION,
        "kind": c.LWS_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


async def denial(create: Any) -> str:
    with pytest.raises(ApiStatusError) as raised:
        await create
    return raised.value.status.message


async def test_defaulting_is_stored(webhook_client: KubeClient, webhook_namespace: str) -> None:
    created = await webhook_client.create(LEADERWORKERSETS, lws(webhook_namespace))
    spec = created["spec"]
    assert spec["networkConfig"] == {"subdomainPolicy": c.SUBDOMAIN_SHARED}
    assert spec["rolloutStrategy"] == {
        "type": c.ROLLOUT_STRATEGY_ROLLING_UPDATE,
        "rollingUpdateConfiguration": {"partition": 0, "maxUnavailable": 1, "maxSurge": 0},
    }
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART
    assert spec["replicas"] == 1


async def test_deprecated_default_restart_policy_becomes_none(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    body = lws(webhook_namespace)
    body["spec"]["leaderWorkerTemplate"]["restartPolicy"] = c.RESTART_POLICY_DEPRECATED_DEFAULT
    created = await webhook_client.create(LEADERWORKERSETS, body)
    assert created["spec"]["leaderWorkerTemplate"]["restartPolicy"] == c.RESTART_POLICY_NONE


async def test_invalid_name_is_denied_with_upstream_wording(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    message = await denial(webhook_client.create(LEADERWORKERSETS, lws(webhook_namespace, "2cube")))
    assert message.startswith(
        'admission webhook "vleaderworkerset.kb.io" denied the request: '
        'metadata.name: Invalid value: "2cube": a DNS-1035 label'
    )


async def test_several_errors_are_aggregated(webhook_client: KubeClient, webhook_namespace: str) -> None:
    body = lws(webhook_namespace, replicas=100000)
    body["spec"]["leaderWorkerTemplate"]["size"] = 1000000
    body["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 0}}
    message = await denial(webhook_client.create(LEADERWORKERSETS, body))
    assert message == (
        'admission webhook "vleaderworkerset.kb.io" denied the request: ['
        "spec.replicas: Invalid value: 100000: "
        "the product of replicas and worker replicas must not exceed 2147483647, "
        "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: "
        'Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: '
        "must not be 0 when `maxSurge` is 0]"
    )


async def test_a_bad_rollout_annotation_is_denied_naming_it_and_the_rule(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    body = lws(webhook_namespace, "annotated")
    body["metadata"]["annotations"] = {ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE: "600"}
    created = await webhook_client.create(LEADERWORKERSETS, body)  # a good value is admitted
    patch = {"metadata": {"annotations": {ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE: "10m"}}}
    message = await denial(
        webhook_client.merge_patch(LEADERWORKERSETS, webhook_namespace, "annotated", patch)
    )
    assert message == (
        'admission webhook "vleaderworkerset.kb.io" denied the request: '
        f'metadata.annotations.{ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE}: Invalid value: "10m": '
        "must be a whole number of seconds from 1 to 31536000"
    )
    assert created["metadata"]["annotations"][ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE] == "600"


async def test_subgroup_size_is_immutable(webhook_client: KubeClient, webhook_namespace: str) -> None:
    body = lws(webhook_namespace)
    body["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 1}
    created = await webhook_client.create(LEADERWORKERSETS, body)
    created["spec"]["leaderWorkerTemplate"]["subGroupPolicy"]["subGroupSize"] = 2
    message = await denial(webhook_client.update(LEADERWORKERSETS, created))
    assert message.endswith(
        "spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize: Invalid value: 2: field is immutable"
    )


async def test_size_and_replicas_can_change(webhook_client: KubeClient, webhook_namespace: str) -> None:
    created = await webhook_client.create(LEADERWORKERSETS, lws(webhook_namespace))
    created["spec"]["replicas"] = 3
    created["spec"]["leaderWorkerTemplate"]["size"] = 3
    updated = await webhook_client.update(LEADERWORKERSETS, created)
    assert (updated["spec"]["replicas"], updated["spec"]["leaderWorkerTemplate"]["size"]) == (3, 3)


def leader_pod(namespace: str, name: str = "sample-1") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {c.LABEL_SET_NAME: "sample", c.LABEL_WORKER_INDEX: "0"},
            "annotations": {c.ANNOTATION_SIZE: "2", c.ANNOTATION_EXCLUSIVE_TOPOLOGY: "rack"},
        },
        "spec": {
            "subdomain": "sample",
            "containers": [{"name": "main", "image": "nginx", "env": [{"name": "USER", "value": "x"}]}],
        },
    }


async def test_leader_pod_is_labelled_with_env_and_affinity(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    created = await webhook_client.create(PODS, leader_pod(webhook_namespace))
    key = keys.group_key(webhook_namespace, "sample-1")
    labels = created["metadata"]["labels"]
    assert (labels[c.LABEL_GROUP_INDEX], labels[c.LABEL_GROUP_KEY]) == ("1", key)
    assert created["spec"]["containers"][0]["env"] == [
        {"name": c.ENV_LWS_LEADER_ADDRESS, "value": f"sample-1.sample.{webhook_namespace}"},
        {"name": c.ENV_LWS_GROUP_SIZE, "value": "2"},
        {"name": c.ENV_LWS_WORKER_INDEX, "value": "0"},
        {"name": "USER", "value": "x"},
    ]
    terms = created["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms[0]["labelSelector"]["matchExpressions"][0]["values"] == [key]


async def test_pod_without_ordinal_is_denied(webhook_client: KubeClient, webhook_namespace: str) -> None:
    message = await denial(webhook_client.create(PODS, leader_pod(webhook_namespace, "leader")))
    assert message == 'admission webhook "mpod.kb.io" denied the request: parsing pod ordinal for pod leader'


async def test_disaggregatedset_partition_is_denied(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    def role(name: str, partition: int = 0) -> Obj:
        spec = lws(webhook_namespace)["spec"]
        spec["replicas"] = 1
        spec["rolloutStrategy"] = {
            "rollingUpdateConfiguration": {"partition": partition, "maxUnavailable": 1}
        }
        return {"name": name, "spec": spec}

    body = {
        "apiVersion": c.DS_API_VERSION,
        "kind": c.DS_KIND,
        "metadata": {"name": "ds", "namespace": webhook_namespace},
        "spec": {"roles": [role("prefill", 1), role("decode")]},
    }
    message = await denial(webhook_client.create(DISAGGREGATEDSETS, body))
    assert message == (
        'admission webhook "vdisaggregatedset.kb.io" denied the request: '
        "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.partition: Forbidden: "
        "partition is not supported by DisaggregatedSet; "
        "rolling updates are managed across roles by the DisaggregatedSet controller"
    )
