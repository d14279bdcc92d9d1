"""Every LeaderWorkerSet in upstream's samples/ and examples/ reaches Available, applied unchanged
(only placed in a fresh namespace) on a cluster sized for them (`samples_env`).

Objects of other kinds in those files are not applied, except the ServiceAccounts a LeaderWorkerSet
runs its pods as (tensorrt-llm_rbac.yaml): without them the StatefulSets cannot create pods.
The Volcano example names `schedulerName: volcano`; no Volcano scheduler runs here, so its pods are
created (webhook and controllers did their part) and wait to be scheduled — that is asserted instead.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NAMESPACES, PODS, ResourceRef
from tests.e2e.conftest import SamplesEnv
from tests.support import upstream
from tests.support.expect import expect_groups_available, expect_valid_pods, expect_valid_worker_statefulsets
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
SERVICE_ACCOUNTS = ResourceRef("", "v1", "ServiceAccount", "serviceaccounts")


def documents() -> Iterator[tuple[str, Obj]]:
    for folder in ("samples", "examples"):
        for path in upstream.files(folder):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc:
                    yield f"{folder}/{path.name}", doc


def leaderworkersets() -> list[Any]:
    """Upstream's 16 LeaderWorkerSet samples and examples; fewer (absent or cut-down data) turns
    into one case that fails or skips loudly, never an empty parameter set."""
    found = [
        pytest.param(doc, id=f"{source}:{doc['metadata']['name']}")
        for source, doc in documents()
        if doc.get("kind") == c.LWS_KIND
    ]
    return upstream.params(found, minimum=16, what="upstream LeaderWorkerSet samples")


def pod_templates(lws: Obj) -> list[Obj]:
    lwt = lws["spec"]["leaderWorkerTemplate"]
    return [t for t in (lwt.get("leaderTemplate"), lwt["workerTemplate"]) if t]


def service_accounts_for(lws: Obj) -> list[Obj]:
    wanted = {t["spec"].get("serviceAccountName") for t in pod_templates(lws)} - {None}
    return [
        doc
        for _, doc in documents()
        if doc.get("kind") == "ServiceAccount" and doc["metadata"]["name"] in wanted
    ]


def scheduler_names(lws: Obj) -> set[str]:
    return {t["spec"].get("schedulerName", "default-scheduler") for t in pod_templates(lws)}


@pytest.fixture
async def sample_ns(samples_env: SamplesEnv, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    name = f"sample-{uuid.uuid4().hex[:8]}"
    await samples_env.api.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    await samples_env.api.delete(NAMESPACES, None, name)


SAMPLES = leaderworkersets()


@pytest.fixture(scope="module", autouse=True)
def upstream_samples_present() -> None:
    """Checked before the samples cluster starts (autouse runs first in its scope): without the
    data, the module fails (CI) or skips with the reason instead of starting a cluster for nothing."""
    for param in SAMPLES:
        upstream.check_case(param.values[0])


@pytest.mark.parametrize("sample", SAMPLES)
async def test_upstream_sample_reaches_available(
    samples_env: SamplesEnv, sample_ns: str, sample: Obj
) -> None:
    upstream.check_case(sample)
    api, ns = samples_env.api, sample_ns
    lws = copy.deepcopy(sample)
    lws["metadata"]["namespace"] = ns
    name = lws["metadata"]["name"]
    replicas, size = lws["spec"].get("replicas", 1), lws["spec"]["leaderWorkerTemplate"].get("size", 1)
    for account in service_accounts_for(lws):
        await api.create(
            SERVICE_ACCOUNTS, {**account, "metadata": {**account["metadata"], "namespace": ns}}, ns
        )

    await api.create(LEADERWORKERSETS, lws, ns)

    if scheduler_names(lws) != {"default-scheduler"}:
        await expect_pods_wait_for_their_scheduler(api, ns, name, replicas * size)
        return
    await expect_groups_available(api, ns, replicas, name)
    await expect_valid_worker_statefulsets(api, ns, name=name)
    await expect_valid_pods(api, ns, replicas, size, name)


async def expect_pods_wait_for_their_scheduler(api: Any, ns: str, name: str, pods: int) -> None:
    """The controllers and the webhook did their part: every pod exists; none is bound to a node.

    The samples' manager runs without gangSchedulingManagement, so (as upstream) no pod is put in a
    PodGroup: none carries the group-name annotation a Volcano PodGroup would be found by.
    """

    async def all_created() -> bool:
        created = await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={name}")
        assert len(created) == pods, f"{len(created)} pods, want {pods}"
        grouped = [
            p["metadata"]["name"]
            for p in created
            if c.ANNOTATION_SCHEDULING_GROUP_NAME in p["metadata"].get("annotations", {})
        ]
        assert grouped == [], f"pods put in a PodGroup without a gang-scheduling provider: {grouped}"
        return True

    async def unscheduled() -> bool:
        created = await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={name}")
        return all(not p["spec"].get("nodeName") and p["status"].get("phase") == "Pending" for p in created)

    await eventually(all_created)
    await consistently(unscheduled)
