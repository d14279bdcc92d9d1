"""What a user sees: `kubectl apply` of a LeaderWorkerSet through our webhooks.

The real kubectl (v1.37.2) talks to the real kube-apiserver, which calls our webhook server over
TLS. A rejected object prints `Error from server (Forbidden): ...` followed by upstream's message
exactly: the webhook name, "denied the request", and the Go-rendered field errors. The last test
runs the webhooks as users do locally, in an `lws manager --webhook-url-host 127.0.0.1` process.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster, free_port
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from leaderworkerset.webhooks import certs
from tests.support.cli import kubectl_argv, run
from tests.support.wait import eventually

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]

DENIED = 'admission webhook "vleaderworkerset.kb.io" denied the request: '
ON_CREATE = 'Error from server (Forbidden): error when creating "STDIN": ' + DENIED
DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)
SUBGROUP_SIZE = "spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize"
ROLLING = "spec.rolloutStrategy.rollingUpdateConfiguration"
SURGE_X = 'intstr.IntOrString{Type:1, IntVal:0, StrVal:"x"}'


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Kubectl:
    """The cluster's kubectl binary, run without blocking the event loop our webhook server uses."""

    binary: Path
    kubeconfig: Path

    async def __call__(self, *args: str, stdin: str = "") -> Result:
        result = await asyncio.wait_for(run(kubectl_argv(self.binary, self.kubeconfig, *args), stdin), 60)
        return Result(result.code, result.out, result.err)

    async def apply(self, manifest: Obj, *flags: str) -> Result:
        return await self("apply", *flags, "-f", "-", stdin=yaml.safe_dump(manifest))


@pytest.fixture
def kubectl(apiserver_cluster: LocalCluster) -> Kubectl:
    return Kubectl(apiserver_cluster.kubectl, apiserver_cluster.kubeconfig)


def manifest(namespace: str, name: str = "sample", **spec: Any) -> Obj:
    """A valid 2x2 LeaderWorkerSet; keyword arguments replace top-level spec fields."""
    body: Obj = {
        "replicas": 2,
        "leaderWorkerTemplate": {
            "size": 2,
            "workerTemplate": {"spec": {"containers": [{"name": "w", "image": "nginx"}]}},
        },
    }
    body.update(spec)
    return {
        "apiVersion": c.LWS_API_VERSION,
        "kind": c.LWS_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def template(**fields: Any) -> Obj:
    """A leaderWorkerTemplate of size 2 with extra fields."""
    return {
        "size": 2,
        "workerTemplate": {"spec": {"containers": [{"name": "w", "image": "nginx"}]}},
        **fields,
    }


def rolling(**configuration: Any) -> Obj:
    return {"type": c.ROLLOUT_STRATEGY_ROLLING_UPDATE, "rollingUpdateConfiguration": configuration}


@dataclass(frozen=True)
class CreateCase:
    name: str = "sample"
    spec: Obj = field(default_factory=dict)
    annotations: Obj = field(default_factory=dict)
    want_message: str = ""


CREATE_CASES = [
    pytest.param(
        CreateCase(name="2cube", want_message=f'metadata.name: Invalid value: "2cube": {DNS1035}'),
        id="name is not a DNS-1035 label",
    ),
    pytest.param(
        CreateCase(
            spec={"leaderWorkerTemplate": template(size=0)},
            want_message="spec.leaderWorkerTemplate.size: Invalid value: 0: "
            "size must be equal or greater than 1",
        ),
        id="size 0",
    ),
    pytest.param(
        CreateCase(
            spec={"replicas": 100000, "leaderWorkerTemplate": template(size=1000000)},
            want_message="spec.replicas: Invalid value: 100000: "
            "the product of replicas and worker replicas must not exceed 2147483647",
        ),
        id="replicas times size overflows int32",
    ),
    pytest.param(
        CreateCase(
            spec={"leaderWorkerTemplate": template(subGroupPolicy={"subGroupSize": 3})},
            want_message=f"[{SUBGROUP_SIZE}: Invalid value: 3: size or size - 1 must be divisible by "
            f"subGroupSize, {SUBGROUP_SIZE}: Invalid value: 3: subGroupSize cannot be larger than size]",
        ),
        id="subGroupSize larger than size",
    ),
    pytest.param(
        CreateCase(
            annotations={c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY: "rack"},
            want_message=f"metadata.annotations.{c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY}: "
            'Invalid value: "rack": cannot have subgroup-exclusive-topology without subGroupSize set',
        ),
        id="subgroup exclusive topology without subGroupSize",
    ),
    pytest.param(
        CreateCase(
            spec={"rolloutStrategy": rolling(maxSurge="x")},
            # Upstream reports the bad string twice: once as a percent, once when scaling it.
            want_message=f"[{ROLLING}.maxSurge: Invalid value: {SURGE_X}: {PERCENT}, "
            f"{ROLLING}.maxSurge: Invalid value: {SURGE_X}: invalid value]",
        ),
        id="maxSurge is not a percent",
    ),
    pytest.param(
        CreateCase(
            spec={"rolloutStrategy": rolling(maxUnavailable="20%", maxSurge=0)},
            want_message=f"{ROLLING}.maxUnavailable: Invalid value: "
            'intstr.IntOrString{Type:1, IntVal:0, StrVal:"20%"}: must not be 0 when `maxSurge` is 0',
        ),
        id="maxUnavailable 20% of 2 replicas rounds down to 0 with maxSurge 0",
    ),
]


@pytest.mark.parametrize("case", CREATE_CASES)
async def test_apply_of_an_invalid_leaderworkerset_prints_upstreams_message(
    kubectl: Kubectl, webhook_namespace: str, case: CreateCase
) -> None:
    body = manifest(webhook_namespace, case.name, **case.spec)
    if case.annotations:
        body["metadata"]["annotations"] = case.annotations

    result = await kubectl.apply(body)

    assert result.code == 1
    assert result.stderr == ON_CREATE + case.want_message + "\n"
    assert result.stdout == ""


async def test_apply_of_a_valid_leaderworkerset_stores_the_defaults(
    kubectl: Kubectl, webhook_namespace: str
) -> None:
    result = await kubectl.apply(manifest(webhook_namespace))
    assert (result.code, result.stdout) == (0, "leaderworkerset.leaderworkerset.x-k8s.io/sample created\n")

    shown = await kubectl("get", "lws", "sample", "-n", webhook_namespace, "-o", "yaml")
    spec = yaml.safe_load(shown.stdout)["spec"]
    assert (spec["groupIdentity"], spec["networkConfig"], spec["rolloutStrategy"]["type"]) == (
        c.GROUP_IDENTITY_ORDINAL,
        {"subdomainPolicy": c.SUBDOMAIN_SHARED},
        c.ROLLOUT_STRATEGY_ROLLING_UPDATE,
    )


@pytest.mark.parametrize("server_side", [False, True], ids=["client-side apply", "server-side apply"])
async def test_reapply_changing_subgroup_size_is_denied_as_immutable(
    kubectl: Kubectl, webhook_namespace: str, server_side: bool
) -> None:
    flags = ("--server-side",) if server_side else ()
    body = manifest(webhook_namespace, leaderWorkerTemplate=template(subGroupPolicy={"subGroupSize": 1}))
    assert (await kubectl.apply(body, *flags)).code == 0

    changed = copy.deepcopy(body)
    changed["spec"]["leaderWorkerTemplate"]["subGroupPolicy"]["subGroupSize"] = 2
    result = await kubectl.apply(changed, *flags)

    assert result.code == 1
    assert result.stderr.startswith("Error from server (Forbidden): ")
    assert result.stderr.endswith(f"{DENIED}{SUBGROUP_SIZE}: Invalid value: 2: field is immutable\n")


async def test_dry_run_server_goes_through_the_webhooks(kubectl: Kubectl, webhook_namespace: str) -> None:
    result = await kubectl.apply(manifest(webhook_namespace, "2cube"), "--dry-run=server")
    assert result.stderr == ON_CREATE + f'metadata.name: Invalid value: "2cube": {DNS1035}\n'


# ---- the same through the `lws manager` process in local dev URL mode ---------------------------


@pytest.fixture
async def manager_webhooks(
    apiserver_cluster: LocalCluster, webhook_client: KubeClient, lws_crds: list[str], tmp_path: Path
) -> AsyncIterator[None]:
    """`lws manager --webhooks-only --webhook-url-host 127.0.0.1` as a separate process; it issues
    its certificate and registers upstream-named URL configurations for the whole cluster, which
    are removed again afterwards."""
    lws = Path(sys.executable).parent / "lws"
    argv = [
        *("manager", "--kubeconfig", str(apiserver_cluster.kubeconfig), "--webhooks-only"),
        *("--webhook-url-host", "127.0.0.1", "--webhook-port", str(free_port())),
        *("--cert-dir", str(tmp_path / "certs"), "--namespace", "lws-kubectl-test"),
        *("--metrics-bind-address", "0", "--health-probe-bind-address", f"127.0.0.1:{free_port()}"),
    ]
    with (tmp_path / "manager.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(str(lws), *argv, stdout=log, stderr=log)
    try:
        yield
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)
        for ref, name in (
            (certs.MUTATING_CONFIGURATIONS, c.MUTATING_WEBHOOK_CONFIGURATION_NAME),
            (certs.VALIDATING_CONFIGURATIONS, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME),
        ):
            with contextlib.suppress(ApiStatusError):
                await webhook_client.delete(ref, None, name)
        await eventually(
            lambda: admitted_without_webhooks(webhook_client), message="configurations still active"
        )


async def admitted_without_webhooks(client: KubeClient) -> bool:
    """Whether the API server admits a LeaderWorkerSet again now that the manager is gone."""
    body = manifest("default", "probe")
    try:
        await client.request(
            "POST", LEADERWORKERSETS.collection_path("default"), body=body, params={"dryRun": "All"}
        )
    except ApiStatusError:
        return False
    return True


async def test_apply_through_the_lws_manager_process(
    kubectl: Kubectl, manager_webhooks: None, namespace: str
) -> None:
    body = manifest(namespace, leaderWorkerTemplate=template(size=0))

    async def denied() -> Result | None:
        result = await kubectl.apply(body, "--dry-run=server")
        return result if result.code else None

    result = await eventually(denied, timeout=60, message="the manager's webhooks never answered")
    assert result.stderr == (
        ON_CREATE + "spec.leaderWorkerTemplate.size: Invalid value: 0: size must be equal or greater than 1\n"
    )
