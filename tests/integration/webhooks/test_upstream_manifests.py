"""Upstream's own webhook configurations, unchanged except for the clientConfig, drive our server.

config/webhook/manifests.yaml of kubernetes-sigs/lws plus its two kustomize patches (the pod
objectSelector) are applied as JSON patches, each webhook's `service` clientConfig is replaced by a
URL to our server with its CA, and everything else — names, paths, rules, objectSelectors,
sideEffects, failurePolicy — is registered as upstream ships it. The API server then admits,
denies and mutates through them, and calls us only for what those rules select.

The configurations select every namespace (upstream's have no namespaceSelector), so they live only
for this module, on this worker's own cluster, and are deleted before it ends.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups import keys
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError, is_not_found
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, LEADERWORKERSETS, PODS
from leaderworkerset.webhooks import certissue, certs
from leaderworkerset.webhooks.metrics import WebhookMetrics, new_webhook_metrics
from leaderworkerset.webhooks.server import WebhookServer
from tests.integration.webhooks.conftest import REFS
from tests.support import upstream
from tests.support.wait import eventually

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]

PATCHES = {
    "MutatingWebhookConfiguration": "webhook-mutating-patch.yaml",
    "ValidatingWebhookConfiguration": "webhook-validating-patch.yaml",
}


def upstream_configurations() -> list[Obj]:
    """Upstream's two configurations with its kustomize JSON patches applied."""
    configurations = []
    for document in yaml.safe_load_all(upstream.require("config", "webhook-manifests.yaml").read_text()):
        operations = yaml.safe_load(upstream.require("config", PATCHES[document["kind"]]).read_text())
        configurations.append(jsonpatch.apply_patch(document, operations))
    return configurations


def with_url_client_config(configuration: Obj, port: int, ca_bundle: bytes) -> Obj:
    """The configuration with only each webhook's clientConfig replaced by a URL to our server."""
    result = copy.deepcopy(configuration)
    for webhook in result["webhooks"]:
        path = webhook["clientConfig"]["service"]["path"]
        webhook["clientConfig"] = {
            "url": f"https://127.0.0.1:{port}{path}",
            "caBundle": base64.b64encode(ca_bundle).decode(),
        }
    return result


def without_client_config(configuration: Obj) -> list[Obj]:
    return [{k: v for k, v in hook.items() if k != "clientConfig"} for hook in configuration["webhooks"]]


@dataclass
class Served:
    """Our server and its request counters (controller-runtime's `webhook_requests_total`)."""

    server: WebhookServer
    ca: bytes
    metrics: WebhookMetrics

    def calls(self, path: str) -> float:
        return sum(
            sample.value
            for metric in self.metrics.requests.collect()
            for sample in metric.samples
            if sample.name.endswith("_total") and sample.labels["webhook"] == path
        )

    def snapshot(self) -> dict[str, float]:
        return {path: self.calls(path) for path in ALL_PATHS}


ALL_PATHS = (
    c.WEBHOOK_PATH_MUTATE_LWS,
    c.WEBHOOK_PATH_VALIDATE_LWS,
    c.WEBHOOK_PATH_MUTATE_POD,
    c.WEBHOOK_PATH_VALIDATE_POD,
    c.WEBHOOK_PATH_VALIDATE_DS,
)


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    cert_dir = tmp_path_factory.mktemp("upstream-manifest-certs")
    artifacts = certissue.generate(certs.CertConfig(ip_addresses=("127.0.0.1",)), certs.utc_now())
    certs.write_cert_dir(cert_dir, artifacts)
    metrics = new_webhook_metrics()
    server = WebhookServer(cert_dir, host="127.0.0.1", port=0, metrics=metrics)
    await server.start()
    yield Served(server, artifacts.ca_cert, metrics)
    await server.stop()


def probe_lws(namespace: str, name: str) -> Obj:
    return {
        "apiVersion": c.LWS_API_VERSION,
        "kind": c.LWS_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "w"}]}}}},
    }


async def denied_by(client: KubeClient, webhook: str) -> bool:
    """Whether a dry-run create with a name only our webhook rejects is now denied by `webhook`."""
    path = LEADERWORKERSETS.collection_path("default")
    try:
        await client.request("POST", path, body=probe_lws("default", "2probe"), params={"dryRun": "All"})
    except ApiStatusError as err:
        return webhook in err.status.message
    return False


@contextlib.asynccontextmanager
async def registered(client: KubeClient, configurations: list[Obj]) -> AsyncIterator[None]:
    for configuration in configurations:
        await client.create(REFS[configuration["kind"]], configuration)
    try:
        yield
    finally:
        for configuration in configurations:
            with contextlib.suppress(ApiStatusError):
                await client.delete(REFS[configuration["kind"]], None, configuration["metadata"]["name"])


@pytest.fixture(scope="module")
async def upstream_webhooks(
    lws_crds: list[str], webhook_client: KubeClient, served: Served
) -> AsyncIterator[None]:
    configurations = [
        with_url_client_config(cfg, served.server.port, served.ca) for cfg in upstream_configurations()
    ]
    async with registered(webhook_client, configurations):
        await eventually(lambda: denied_by(webhook_client, "vleaderworkerset.kb.io"))
        yield
    await eventually(lambda: not_denied(webhook_client), message="upstream configurations still active")


async def not_denied(client: KubeClient) -> bool:
    return not await denied_by(client, "vleaderworkerset.kb.io")


async def denial(create: Any) -> str:
    with pytest.raises(ApiStatusError) as raised:
        await create
    return raised.value.status.message


# ---- the registered objects are upstream's, but for the clientConfig ------------------------------


def test_registered_configurations_differ_from_upstream_only_in_client_config() -> None:
    for configuration in upstream_configurations():
        ours = with_url_client_config(configuration, 9443, b"ca")
        assert without_client_config(ours) == without_client_config(configuration)
        assert {k: v for k, v in ours.items() if k != "webhooks"} == {
            k: v for k, v in configuration.items() if k != "webhooks"
        }
    mutating, validating = upstream_configurations()
    assert [hook["name"] for hook in mutating["webhooks"]] == ["mleaderworkerset.kb.io", "mpod.kb.io"]
    assert [hook["name"] for hook in validating["webhooks"]] == [
        "vleaderworkerset.kb.io",
        "vpod.kb.io",
        "vdisaggregatedset.kb.io",
    ]
    selector = {"matchExpressions": [{"key": c.LABEL_SET_NAME, "operator": "Exists"}]}
    assert mutating["webhooks"][1]["objectSelector"] == selector
    assert validating["webhooks"][1]["objectSelector"] == selector


# ---- LeaderWorkerSets: mleaderworkerset.kb.io and vleaderworkerset.kb.io --------------------------


async def test_leaderworkerset_is_defaulted_and_validated(
    webhook_client: KubeClient, upstream_webhooks: None, namespace: str, served: Served
) -> None:
    before = served.snapshot()
    created = await webhook_client.create(LEADERWORKERSETS, probe_lws(namespace, "sample"))

    spec = created["spec"]
    assert (spec["groupIdentity"], spec["groupReplacementPolicy"]) == (
        c.GROUP_IDENTITY_ORDINAL,
        c.GROUP_REPLACEMENT_POST_TERMINATION,
    )
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART
    assert spec["networkConfig"] == {"subdomainPolicy": c.SUBDOMAIN_SHARED}
    assert spec["podTerminationPolicy"] == c.POD_TERMINATION_POLICY_DEFAULT
    calls = {path: served.calls(path) - before[path] for path in ALL_PATHS}
    assert calls == {
        c.WEBHOOK_PATH_MUTATE_LWS: 1,
        c.WEBHOOK_PATH_VALIDATE_LWS: 1,
        c.WEBHOOK_PATH_MUTATE_POD: 0,
        c.WEBHOOK_PATH_VALIDATE_POD: 0,
        c.WEBHOOK_PATH_VALIDATE_DS: 0,
    }


async def test_invalid_leaderworkerset_is_denied(
    webhook_client: KubeClient, upstream_webhooks: None, namespace: str
) -> None:
    body = probe_lws(namespace, "sample")
    body["spec"]["leaderWorkerTemplate"]["size"] = 0
    message = await denial(webhook_client.create(LEADERWORKERSETS, body))
    assert message == (
        'admission webhook "vleaderworkerset.kb.io" denied the request: '
        "spec.leaderWorkerTemplate.size: Invalid value: 0: size must be equal or greater than 1"
    )


async def test_update_goes_through_both_leaderworkerset_webhooks(
    webhook_client: KubeClient, upstream_webhooks: None, namespace: str
) -> None:
    body = probe_lws(namespace, "sample")
    body["spec"]["leaderWorkerTemplate"]["size"] = 2
    created = await webhook_client.create(LEADERWORKERSETS, body)
    created["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 1}
    message = await denial(webhook_client.update(LEADERWORKERSETS, created))
    assert message.endswith(
        "spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize: Invalid value: 1: "
        "cannot enable subGroupSize after the lws is already created"
    )


async def test_side_effects_none_lets_dry_run_through(
    webhook_client: KubeClient, upstream_webhooks: None, namespace: str
) -> None:
    path = LEADERWORKERSETS.collection_path(namespace)
    dry = await webhook_client.request(
        "POST", path, body=probe_lws(namespace, "dry"), params={"dryRun": "All"}
    )
    assert dry["spec"]["groupIdentity"] == c.GROUP_IDENTITY_ORDINAL
    with pytest.raises(ApiStatusError) as raised:
        await webhook_client.get(LEADERWORKERSETS, namespace, "dry")
    assert is_not_found(raised.value)


# ---- DisaggregatedSets: vdisaggregatedset.kb.io -------------------------------------------------


async def test_invalid_disaggregatedset_is_denied(
    webhook_client: KubeClient, upstream_webhooks: None, namespace: str
) -> None:
    def role(name: str) -> Obj:
        spec = probe_lws(namespace, name)["spec"]
        spec["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 0}}
        return {"name": name, "spec": spec}

    body = {
        "apiVersion": c.DS_API_VERSION,
        "kind": c.DS_KIND,
        "metadata": {"name": "ds", "namespace": namespace},
        "spec": {"roles": [role("prefill"), role("decode")]},
    }
    message = await denial(webhook_client.create(DISAGGREGATEDSETS, body))
    assert message.startswith(
        'admission webhook "vdisaggregatedset.kb.io" denied the request: '
        "[spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: "
    )
    assert message.count("must not be 0 when `maxSurge` is 0") == 2


# ---- Pods: mpod.kb.io (CREATE) and vpod.kb.io (CREATE, UPDATE), only with the name label ----------


def pod(namespace: str, name: str, labels: dict[str, str], annotations: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations},
        "spec": {"subdomain": "sample", "containers": [{"name": "main", "image": "nginx"}]},
    }


async def test_pods_without_the_name_label_are_not_sent_to_us(
    webhook_client: KubeClient, upstream_webhooks: None, namespace: str, served: Served
) -> None:
    before = served.snapshot()
    created = await webhook_client.create(PODS, pod(namespace, "plain-0", {"app": "x"}, {}))
    await webhook_client.merge_patch(PODS, namespace, "plain-0", {"metadata": {"labels": {"b": "c"}}})

    assert created["metadata"]["labels"] == {"app": "x"}
    assert "env" not in created["spec"]["containers"][0]
    assert served.snapshot() == before


async def test_pod_update_is_validated_but_not_mutated(
    webhook_client: KubeClient, upstream_webhooks: None, namespace: str, served: Served
) -> None:
    labels = {c.LABEL_SET_NAME: "sample", c.LABEL_WORKER_INDEX: "0"}
    await webhook_client.create(PODS, pod(namespace, "sample-0", labels, {c.ANNOTATION_SIZE: "1"}))
    before = served.snapshot()

    await webhook_client.merge_patch(PODS, namespace, "sample-0", {"metadata": {"labels": {"b": "c"}}})

    assert served.calls(c.WEBHOOK_PATH_VALIDATE_POD) - before[c.WEBHOOK_PATH_VALIDATE_POD] == 1
    assert served.calls(c.WEBHOOK_PATH_MUTATE_POD) == before[c.WEBHOOK_PATH_MUTATE_POD]


async def test_failure_policy_fail_refuses_objects_when_the_server_is_unreachable(
    webhook_client: KubeClient, upstream_webhooks: None, namespace: str, served: Served
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    _, validating = upstream_configurations()
    unreachable = with_url_client_config(validating, closed_port, served.ca)
    unreachable["metadata"]["name"] = "unreachable-validating-webhook-configuration"
    unreachable["webhooks"] = unreachable["webhooks"][:1]  # vleaderworkerset.kb.io only

    async with registered(webhook_client, [unreachable]):

        async def refused() -> str:
            try:
                await webhook_client.create(LEADERWORKERSETS, probe_lws(namespace, "sample"))
            except ApiStatusError as err:
                return err.status.message
            await webhook_client.delete(LEADERWORKERSETS, namespace, "sample")
            return ""

        message = await eventually(refused)
    assert message.startswith('Internal error occurred: failed calling webhook "vleaderworkerset.kb.io"')
    assert "connection refused" in message


# ---- a group's pods carry the injected labels and env ---------------------------------


@dataclass(frozen=True)
class PodCase:
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    want_labels: dict[str, str] = field(default_factory=dict)
    want_env: tuple[tuple[str, str], ...] = ()
    want_affinity_key: str = ""  # the label the required pod affinity matches on, if any


GROUP = {c.LABEL_SET_NAME: "sample"}
LEADER_NAME = "sample-1"
# Placeholders for what depends on the test's namespace.
PLACEHOLDER_NS = "{ns}"
GROUP_KEY = "{group-key}"


def resolved(values: dict[str, str], namespace: str) -> dict[str, str]:
    group_key = keys.group_key(namespace, LEADER_NAME)
    return {
        key: value.replace(GROUP_KEY, group_key).replace(PLACEHOLDER_NS, namespace)
        for key, value in values.items()
    }


POD_CASES = [
    pytest.param(
        PodCase(
            name=LEADER_NAME,
            labels={**GROUP, c.LABEL_WORKER_INDEX: "0"},
            annotations={
                c.ANNOTATION_SIZE: "4",
                c.ANNOTATION_SUBGROUP_SIZE: "2",
                c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY: "rack",
            },
            want_labels={
                c.LABEL_GROUP_INDEX: "1",
                c.LABEL_GROUP_KEY: GROUP_KEY,
                c.LABEL_SUBGROUP_INDEX: "0",
                c.LABEL_SUBGROUP_KEY: keys.subgroup_key(LEADER_NAME, 0),
            },
            want_env=(
                (c.ENV_LWS_LEADER_ADDRESS, f"sample-1.sample.{PLACEHOLDER_NS}"),
                (c.ENV_LWS_GROUP_SIZE, "4"),
                (c.ENV_LWS_WORKER_INDEX, "0"),
            ),
            want_affinity_key=c.LABEL_SUBGROUP_KEY,
        ),
        id="leader joins subgroup 0 with subgroup exclusive affinity",
    ),
    pytest.param(
        PodCase(
            name="sample-1-3",
            labels={**GROUP, c.LABEL_GROUP_INDEX: "1", c.LABEL_GROUP_KEY: GROUP_KEY},
            annotations={
                c.ANNOTATION_SIZE: "4",
                c.ANNOTATION_LEADER_NAME: LEADER_NAME,
                c.ANNOTATION_SUBGROUP_SIZE: "2",
            },
            want_labels={
                c.LABEL_WORKER_INDEX: "3",
                c.LABEL_SUBGROUP_INDEX: "1",
                c.LABEL_SUBGROUP_KEY: keys.subgroup_key(LEADER_NAME, 1),
            },
            want_env=(
                (c.ENV_LWS_LEADER_ADDRESS, f"sample-1.sample.{PLACEHOLDER_NS}"),
                (c.ENV_LWS_GROUP_SIZE, "4"),
                (c.ENV_LWS_WORKER_INDEX, "3"),
            ),
        ),
        id="worker 3 of 4 is in subgroup 1 of size 2",
    ),
    pytest.param(
        PodCase(
            name="sample-1-2",
            labels={**GROUP, c.LABEL_GROUP_INDEX: "1", c.LABEL_GROUP_KEY: GROUP_KEY},
            annotations={
                c.ANNOTATION_SIZE: "5",
                c.ANNOTATION_LEADER_NAME: LEADER_NAME,
                c.ANNOTATION_SUBGROUP_SIZE: "2",
                c.ANNOTATION_SUBGROUP_POLICY_TYPE: c.SUBGROUP_POLICY_LEADER_EXCLUDED,
            },
            want_labels={
                c.LABEL_WORKER_INDEX: "2",
                c.LABEL_SUBGROUP_INDEX: "0",
                c.LABEL_SUBGROUP_KEY: keys.subgroup_key(LEADER_NAME, 0),
            },
            want_env=(
                (c.ENV_LWS_LEADER_ADDRESS, f"sample-1.sample.{PLACEHOLDER_NS}"),
                (c.ENV_LWS_GROUP_SIZE, "5"),
                (c.ENV_LWS_WORKER_INDEX, "2"),
            ),
        ),
        id="leader excluded: workers 1-2 of size 5 form subgroup 0",
    ),
    pytest.param(
        PodCase(
            name="sample-1-1",
            labels={**GROUP, c.LABEL_GROUP_INDEX: "1", c.LABEL_GROUP_KEY: GROUP_KEY},
            annotations={c.ANNOTATION_SIZE: "2", c.ANNOTATION_LEADER_NAME: LEADER_NAME},
            want_labels={c.LABEL_WORKER_INDEX: "1"},
            want_env=(
                (c.ENV_LWS_LEADER_ADDRESS, f"sample-1.sample.{PLACEHOLDER_NS}"),
                (c.ENV_LWS_GROUP_SIZE, "2"),
                (c.ENV_LWS_WORKER_INDEX, "1"),
            ),
        ),
        id="worker without subgroups gets its index from the name",
    ),
]


@pytest.mark.parametrize("case", POD_CASES)
async def test_group_pods_carry_the_injected_labels_and_env(
    webhook_client: KubeClient, upstream_webhooks: None, namespace: str, case: PodCase
) -> None:
    labels = resolved(case.labels, namespace)
    created = await webhook_client.create(PODS, pod(namespace, case.name, labels, case.annotations))

    want_labels = {**labels, **resolved(case.want_labels, namespace)}
    assert created["metadata"]["labels"] == want_labels
    env = [(entry["name"], entry["value"]) for entry in created["spec"]["containers"][0]["env"]]
    assert env == list(resolved(dict(case.want_env), namespace).items())
    affinity = created["spec"].get("affinity", {})
    if case.want_affinity_key:
        terms = affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        expression = terms[0]["labelSelector"]["matchExpressions"][0]
        assert (expression["key"], expression["values"]) == (
            case.want_affinity_key,
            [want_labels[case.want_affinity_key]],
        )
    else:
        assert affinity == {}
