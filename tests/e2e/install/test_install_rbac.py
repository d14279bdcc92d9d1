"""The install's RBAC is sufficient: `lws manager` under the generated ServiceAccount's token (with
leader election, certificate rotation and authenticated metrics) runs a LeaderWorkerSet through
create → Available → rolling update → delete, and a set whose controller makes objects of other kinds
by server-side apply (`groupIdentity: Hash`: a leader Deployment; a group disruption budget: one
PodDisruptionBudget per group), and the API server never answers 403.

And it is not more than that: with one rule taken out (status writes), the journey stalls and the
log shows the refusal, which also proves the log check can see a 403.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.api.installation import MANAGER_ROLE_NAME, METRICS_READER_ROLE_NAME, SERVICE_ACCOUNT_NAME
from leaderworkerset.install import rbac
from leaderworkerset.install.manifests import InstallOptions, granted_features
from leaderworkerset.runtime.resources import (
    DEPLOYMENTS,
    LEADERWORKERSETS,
    LEASES,
    PODDISRUPTIONBUDGETS,
    PODS,
    STATEFULSETS,
    ResourceRef,
)
from tests.e2e.install.conftest import InstallEnv, started, stopped
from tests.support.builders import NAME, LeaderWorkerSetBuilder
from tests.support.expect import expect_gone, expect_groups_available, expect_lws_owned_revisions
from tests.support.lwsapi import create, update_worker_image
from tests.support.manager import ManagerProcess
from tests.support.serviceaccount import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, binding, rbac_denials
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

# one install cluster for the package (install_env, conftest.py): one worker runs it
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("install")]

SERVICE_ACCOUNTS = ResourceRef("", "v1", "ServiceAccount", "serviceaccounts")
NAMESPACES = ResourceRef("", "v1", "Namespace", "namespaces", namespaced=False)
SECRETS = ResourceRef("", "v1", "Secret", "secrets")
SCRAPER, STRANGER = "e2e-metrics-scraper", "e2e-stranger"


@pytest.fixture(scope="module")
async def sa_kubeconfig(install_env: InstallEnv, tmp_path_factory: pytest.TempPathFactory) -> Path:
    api = install_env.api
    for account in (SCRAPER, STRANGER):
        await api.apply(
            SERVICE_ACCOUNTS,
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": account, "namespace": c.DEFAULT_NAMESPACE},
            },
        )
    await api.apply(CLUSTER_ROLE_BINDINGS, binding("e2e-metrics-scraper", METRICS_READER_ROLE_NAME, SCRAPER))
    return install_env.kubeconfig_as(SERVICE_ACCOUNT_NAME, tmp_path_factory.mktemp("sa") / "kubeconfig")


@pytest.fixture
async def namespace(install_env: InstallEnv, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    await install_env.api.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    await install_env.api.delete(NAMESPACES, None, name)


def _scrape(port: int, token: str) -> int:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the metrics certificate is self-signed, as upstream's
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


async def test_the_manager_under_its_service_account_never_gets_403(
    install_env: InstallEnv, sa_kubeconfig: Path, namespace: str
) -> None:
    api = install_env.api
    manager = ManagerProcess(
        install_env.cluster,
        "lws-manager-as-sa",
        kubeconfig=sa_kubeconfig,
        leader_elect=True,
        secure_metrics=True,
    )
    await started(manager, api)
    try:
        # Leader election and certificate rotation ran under the Role in lws-system.
        lease = await api.get(LEASES, c.DEFAULT_NAMESPACE, c.DEFAULT_LEADER_ELECTION_ID)
        assert lease["spec"]["holderIdentity"]
        secret = await api.get(SECRETS, c.DEFAULT_NAMESPACE, c.DEFAULT_WEBHOOK_SECRET_NAME)
        assert set(secret["data"]) >= {"ca.crt", "tls.crt", "tls.key"}

        lws = LeaderWorkerSetBuilder(namespace, NAME).replicas(2).size(2).obj()
        await create(api, lws)
        await expect_groups_available(api, namespace, 2)
        await update_worker_image(api, namespace)
        await expect_groups_available(api, namespace, 2)
        await expect_lws_owned_revisions(api, namespace, 1)
        await api.delete(LEADERWORKERSETS, namespace, NAME)
        await expect_gone(api, namespace, STATEFULSETS)
        await expect_gone(api, namespace, PODS)

        # Objects a server-side apply creates: the apply is authorized as a create then.
        hashed = (
            LeaderWorkerSetBuilder(namespace, NAME)
            .replicas(2)
            .size(2)
            .group_identity(c.GROUP_IDENTITY_HASH)
            .annotation(ext.ANNOTATION_DISRUPTION_BUDGET, "1")
            .obj()
        )
        await create(api, hashed)
        await expect_groups_available(api, namespace, 2)
        assert await api.get(DEPLOYMENTS, namespace, NAME)

        async def a_budget_per_group() -> bool:
            return len(await api.list(PODDISRUPTIONBUDGETS, namespace)) == 2

        await eventually(a_budget_per_group, message="a PodDisruptionBudget per group")
        await api.delete(LEADERWORKERSETS, namespace, NAME)
        await expect_gone(api, namespace, PODS)

        # /metrics authenticates (TokenReview) and authorizes (SubjectAccessReview) as the manager.
        assert await asyncio.to_thread(_scrape, manager.metrics_port, install_env.token(SCRAPER)) == 200
        assert await asyncio.to_thread(_scrape, manager.metrics_port, install_env.token(STRANGER)) == 403
    finally:
        await stopped(manager)
    log = manager.log_text()
    # Positive signs that the log is the whole story: it led and ran its controllers.
    assert "became leader" in log
    assert "caches synced, starting controllers" in log
    assert rbac_denials(log) == []


async def test_without_the_status_rule_the_journey_stalls_on_403(
    install_env: InstallEnv, sa_kubeconfig: Path, namespace: str
) -> None:
    api = install_env.api
    role = await api.get(CLUSTER_ROLES, None, MANAGER_ROLE_NAME)
    status_rule = {"apiGroups": [c.LWS_GROUP], "resources": [f"{c.LWS_PLURAL}/status"], "verbs": ["update"]}
    assert status_rule in role["rules"]
    granted = rbac.for_features(rbac.rules(), granted_features(InstallOptions()))
    reduced = [r.render() for r in granted if r.scope is rbac.Scope.CLUSTER and r.render() != status_rule]
    await api.apply(CLUSTER_ROLES, {**_role_shell(), "rules": reduced})
    manager = ManagerProcess(
        install_env.cluster, "lws-manager-reduced", kubeconfig=sa_kubeconfig, leader_elect=True
    )
    await started(manager, api)
    try:
        await create(api, LeaderWorkerSetBuilder(namespace, NAME).replicas(1).size(2).obj())
        await eventually(lambda: _log_shows_forbidden(manager), timeout=LONG_TIMEOUT)

        async def no_status() -> bool:
            lws = await api.get(LEADERWORKERSETS, namespace, NAME)
            return not (lws.get("status") or {}).get("conditions")

        await consistently(no_status, duration=3)
    finally:
        await stopped(manager)
        await api.apply(CLUSTER_ROLES, {**_role_shell(), "rules": role["rules"]})


def _role_shell() -> dict[str, object]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": MANAGER_ROLE_NAME},
    }


def _log_shows_forbidden(manager: ManagerProcess) -> bool:
    """RBAC's refusal of the status write (the message names the subresource) is in the log."""
    return any(f"{c.LWS_PLURAL}/status" in line for line in rbac_denials(manager.log_text()))
