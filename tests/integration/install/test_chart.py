"""The Helm chart with a real `helm` (v3.22.0, built from its Go module and cached): it lints, renders
what `lws install` applies (same names, the same RBAC rules, the same webhooks), every rendered object
passes a server-side dry run, and `helm upgrade` / `helm uninstall` never delete the CRDs or the
workloads (they are in crds/, which Helm installs once and never touches again). With
`enablePrometheus`, the ServiceMonitor and the PrometheusRule pass a server-side dry run against the
Prometheus Operator's own CRDs (from its Go module, tests/support/promoperator.py)."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import AsyncClient
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource

from leaderworkerset.api import constants as c
from leaderworkerset.api.installation import CONTROLLER_MANAGER_NAME, MANAGER_CONFIG_KEY
from leaderworkerset.crd.install import apply_crds, wait_established
from leaderworkerset.devcluster import tools
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.install import apply as installer
from leaderworkerset.install.manifests import InstallOptions, object_key, render
from leaderworkerset.webhooks.configurations import render_for_service
from tests.support import promoperator
from tests.support.builders import LeaderWorkerSetBuilder

CHART = Path(__file__).resolve().parents[3] / "charts" / "lws"
KUBE_VERSION = "1.37.2"  # helm's built-in default is 1.20 unless stamped at build time
ALL_ON = (
    "enablePrometheus=true,enableCertManager=true,enableDisaggregatedSet=true,"
    "gangSchedulingManagement.schedulerProvider=volcano,quarantineTaints.enabled=true"
)
# No image is published, so the chart requires one (tests/unit/install/test_no_published_image.py).
IMAGE = ("--set", "image.manager.repository=example.test/lws-python")
# APIs of optional add-ons the local API server does not serve (their operators are not installed).
ADD_ON_GROUPS = ("cert-manager.io/", "monitoring.coreos.com/")
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def helm() -> Path:
    return tools.ensure_tool(tools.HELM)


def _helm(helm: Path, *args: str) -> str:
    out = subprocess.run([str(helm), *args], capture_output=True, text=True, check=False)
    assert out.returncode == 0, f"helm {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
    return out.stdout


def template(helm: Path, namespace: str = c.DEFAULT_NAMESPACE, values: str = "") -> list[Obj]:
    args = ["template", "lws", str(CHART), "-n", namespace, "--kube-version", KUBE_VERSION, *IMAGE]
    if values:
        args += ["--set", values]
    return [d for d in yaml.safe_load_all(_helm(helm, *args)) if d]


def _canonical(rules: list[Obj]) -> list[str]:
    """Rule order carries no meaning in RBAC."""
    return sorted(json.dumps(rule, sort_keys=True) for rule in rules)


def by_key(objects: list[Obj]) -> dict[str, Obj]:
    return {object_key(o): o for o in objects}


@dataclass(frozen=True)
class LintCase:
    values: str


@pytest.mark.parametrize(
    "case", [pytest.param(LintCase(""), id="defaults"), pytest.param(LintCase(ALL_ON), id="all-options")]
)
def test_helm_lint(helm: Path, case: LintCase) -> None:
    args = ["lint", str(CHART), "--strict", "--kube-version", KUBE_VERSION, *IMAGE]
    out = _helm(helm, *args, *(["--set", case.values] if case.values else []))
    assert "1 chart(s) linted, 0 chart(s) failed" in out


def test_without_an_image_the_chart_refuses_and_says_how_to_get_one(helm: Path) -> None:
    args = ["template", "lws", str(CHART), "--kube-version", KUBE_VERSION]
    out = subprocess.run([str(helm), *args], capture_output=True, text=True, check=False)
    assert out.returncode != 0, out.stdout
    assert "image.manager.repository is not set, and no lws-python image is published yet" in out.stderr
    for advice in ("hack/build-image.sh", "ctr -n k8s.io images import", "--set image.manager.repository="):
        assert advice in out.stderr, advice


def test_defaults_render_what_lws_install_applies(helm: Path) -> None:
    chart = by_key(template(helm, values="enableDisaggregatedSet=true"))
    ours = by_key(render(InstallOptions()))
    # Helm creates the namespace itself (--create-namespace); the user roles are chart-only, as upstream.
    assert set(ours) - set(chart) == {f"Namespace/{c.DEFAULT_NAMESPACE}"}
    assert {k for k in set(chart) - set(ours)} == {
        f"ClusterRole/lws-disaggregatedset-{role}-role" for role in ("admin", "editor", "viewer")
    }
    for key, obj in ours.items():
        if obj["kind"] in ("ClusterRole", "Role"):
            assert _canonical(chart[key]["rules"]) == _canonical(obj["rules"]), key
        if obj["kind"].endswith("WebhookConfiguration"):
            assert chart[key]["webhooks"] == obj["webhooks"], key
        if obj["kind"] == "Service":
            assert chart[key]["spec"] == obj["spec"], key
    chart_pod = chart[f"Deployment/{c.DEFAULT_NAMESPACE}/{CONTROLLER_MANAGER_NAME}"]["spec"]["template"]
    our_pod = ours[f"Deployment/{c.DEFAULT_NAMESPACE}/{CONTROLLER_MANAGER_NAME}"]["spec"]["template"]
    assert chart_pod["metadata"]["labels"] == our_pod["metadata"]["labels"]
    for field in ("securityContext", "serviceAccountName", "volumes", "topologySpreadConstraints"):
        assert chart_pod["spec"][field] == our_pod["spec"][field], field
    (chart_container,) = chart_pod["spec"]["containers"]
    (our_container,) = our_pod["spec"]["containers"]
    for field in ("args", "ports", "livenessProbe", "readinessProbe", "securityContext", "volumeMounts"):
        assert chart_container[field] == our_container[field], field


def test_optional_parts_follow_their_switches(helm: Path) -> None:
    plain = by_key(template(helm))
    validating = plain["ValidatingWebhookConfiguration/lws-validating-webhook-configuration"]
    assert c.WEBHOOK_NAME_VALIDATE_DS not in [w["name"] for w in validating["webhooks"]]
    full = by_key(template(helm, values=ALL_ON))
    added = set(full) - set(plain)
    assert added == {
        "Certificate/lws-system/lws-serving-cert",
        "Issuer/lws-system/lws-selfsigned-issuer",
        "ServiceMonitor/lws-system/lws-controller-manager-metrics-monitor",
        "PrometheusRule/lws-system/lws-alerts",
        "ClusterRoleBinding/lws-metrics-reader-prometheus",
        "ClusterRole/lws-disaggregatedset-admin-role",  # enableDisaggregatedSet
        "ClusterRole/lws-disaggregatedset-editor-role",
        "ClusterRole/lws-disaggregatedset-viewer-role",
    }
    assert set(plain) - set(full) == {f"Secret/{c.DEFAULT_NAMESPACE}/{c.DEFAULT_WEBHOOK_SECRET_NAME}"}
    # cert-manager: the CA is injected by annotation and the manager does not rotate certificates.
    want = render_for_service(c.DEFAULT_NAMESPACE, cert_manager=True)
    for configuration in want:
        got = full[f"{configuration['kind']}/{configuration['metadata']['name']}"]
        assert got["metadata"]["annotations"] == configuration["metadata"]["annotations"]
    config = yaml.safe_load(full["ConfigMap/lws-system/lws-manager-config"]["data"][MANAGER_CONFIG_KEY])
    assert config["internalCertManagement"] == {"enable": False}
    assert config["gangSchedulingManagement"] == {"schedulerProvider": "volcano"}
    role = full["ClusterRole/lws-manager-role"]
    assert any("podgroups" in rule["resources"] for rule in role["rules"])
    assert not any(
        "podgroups" in rule["resources"] for rule in plain["ClusterRole/lws-manager-role"]["rules"]
    )

    def node_writes(role: Obj) -> list[Obj]:
        return [
            r
            for r in role["rules"]
            if "nodes" in r["resources"] and set(r["verbs"]) - {"get", "list", "watch"}
        ]

    # Node quarantine's taint mode: node patch only with quarantineTaints.enabled, never by default.
    assert node_writes(plain["ClusterRole/lws-manager-role"]) == []
    assert [r["verbs"] for r in node_writes(role)] == [["patch"]]


@pytest.mark.cluster
@pytest.mark.parametrize("values", [pytest.param("", id="defaults"), pytest.param(ALL_ON, id="all-options")])
async def test_every_rendered_object_passes_a_server_side_dry_run(
    helm: Path, kube: AsyncClient, namespace: str, values: str
) -> None:
    objects = [o for o in template(helm, namespace, values) if o["kind"] != "Namespace"]
    served = [o for o in objects if not o["apiVersion"].startswith(ADD_ON_GROUPS)]
    skipped = {o["kind"] for o in objects} - {o["kind"] for o in served}
    assert skipped == (set() if not values else {"Certificate", "Issuer", "ServiceMonitor", "PrometheusRule"})
    keys = await installer.apply_objects(kube, served, dry_run=True)
    assert len(keys) == len(served) >= 15


@pytest.fixture
async def prometheus_operator_crds(kube: AsyncClient) -> AsyncIterator[None]:
    """The operator's ServiceMonitor and PrometheusRule CRDs, served for the test, then removed."""
    from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

    try:
        documents = await asyncio.to_thread(promoperator.crd_documents)
    except tools.ModuleUnavailableError as err:
        pytest.skip(
            f"SKIPPED, Prometheus Operator objects NOT validated: its CRDs cannot be downloaded: {err}"
        )
    names = await apply_crds(kube, documents)
    await wait_established(kube, names)
    for doc in documents:
        names_ = doc["spec"]["names"]
        create_namespaced_resource(doc["spec"]["group"], "v1", names_["kind"], names_["plural"])
    try:
        yield
    finally:
        for name in names:
            await kube.delete(CustomResourceDefinition, name)


@pytest.mark.cluster
async def test_the_servicemonitor_and_the_prometheusrule_pass_the_operators_crds(
    helm: Path, kube: AsyncClient, namespace: str, prometheus_operator_crds: None
) -> None:
    rendered = template(helm, namespace, "enablePrometheus=true")
    objects = [o for o in rendered if o["apiVersion"].startswith("monitoring.coreos.com/")]
    assert sorted(o["kind"] for o in objects) == ["PrometheusRule", "ServiceMonitor"]
    assert len(await installer.apply_objects(kube, objects, dry_run=True)) == 2
    (rule,) = [o for o in objects if o["kind"] == "PrometheusRule"]
    alerts = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}
    assert set(alerts) == {
        "LeaderWorkerSetRestartBudgetExhausted",
        "LeaderWorkerSetRolloutStalled",
        "LeaderWorkerSetManagerNotLeading",
    }
    for name, alert in alerts.items():
        assert {"summary", "description"} <= set(alert["annotations"]), name
        assert alert["for"], name
    assert f'namespace="{namespace}"' in alerts["LeaderWorkerSetManagerNotLeading"]["expr"]
    # The dry run does check them: a duration the CRD's pattern refuses, a field it does not declare.
    bad_for = copy.deepcopy(rule)
    bad_for["spec"]["groups"][0]["rules"][0]["for"] = "one minute"
    (monitor,) = [o for o in objects if o["kind"] == "ServiceMonitor"]
    bad_field = copy.deepcopy(monitor)
    bad_field["spec"]["endpoints"][0]["scrapeEvery"] = "30s"
    # (The API server answers an undeclared field in an apply patch with a 500, not a 422.)
    for broken, why in (
        (bad_for, "spec.groups[0].rules[0].for"),
        (bad_field, "field not declared in schema"),
    ):
        with pytest.raises(ApiError) as refused:
            await installer.apply_objects(kube, [broken], dry_run=True)
        assert why in str(refused.value.status.message), refused.value.status


@pytest.mark.cluster
async def test_helm_upgrade_and_uninstall_keep_the_crds_and_the_workloads(
    helm: Path, apiserver_cluster: LocalCluster, kube: AsyncClient, namespace: str
) -> None:
    kubeconfig = str(apiserver_cluster.kubeconfig)
    lws_resource = create_namespaced_resource(c.LWS_GROUP, c.LWS_VERSION, c.LWS_KIND, c.LWS_PLURAL)
    release_ns = f"{namespace}-helm"
    base = ["--kubeconfig", kubeconfig, "-n", release_ns]
    _helm(helm, "install", "lws", str(CHART), *base, *IMAGE, "--create-namespace")
    try:
        crds = [
            d["metadata"]["name"] for d in yaml.safe_load_all(_helm(helm, "show", "crds", str(CHART))) if d
        ]
        assert len(crds) == 3
        # A workload created while no webhook is registered (nothing serves them on this shape).
        await _without_webhooks(kube)
        lws = LeaderWorkerSetBuilder(namespace).obj()
        lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] = c.RESTART_POLICY_NONE
        await kube.create(lws_resource.from_dict(lws), namespace=namespace)
        _helm(helm, "upgrade", "lws", str(CHART), *base, *IMAGE, "--set", "replicaCount=3")
        _helm(helm, "uninstall", "lws", *base)
        for name in crds:
            _kubectl(apiserver_cluster, "get", "crd", name)
        assert await kube.get(lws_resource, lws["metadata"]["name"], namespace=namespace)
        assert "lws-manager-role" not in _kubectl(apiserver_cluster, "get", "clusterroles", "-o", "name")
    finally:
        # Whatever failed above, leave no release (and no webhooks) behind for the next tests.
        await asyncio.to_thread(subprocess.run, [str(helm), "uninstall", "lws", *base], capture_output=True)
        await _without_webhooks(kube)


async def _without_webhooks(kube: AsyncClient) -> None:
    from lightkube.core.exceptions import ApiError
    from lightkube.resources.admissionregistration_v1 import (
        MutatingWebhookConfiguration,
        ValidatingWebhookConfiguration,
    )

    for resource, name in (
        (MutatingWebhookConfiguration, c.MUTATING_WEBHOOK_CONFIGURATION_NAME),
        (ValidatingWebhookConfiguration, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME),
    ):
        try:
            await kube.delete(resource, name)
        except ApiError as err:
            if err.status.code != 404:
                raise


def _kubectl(cluster: LocalCluster, *args: str) -> str:
    out = subprocess.run(
        [str(cluster.kubectl), f"--kubeconfig={cluster.kubeconfig}", *args], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout
