"""The two controllers under test, each a process with its own identity and its own webhooks.

Both run as a dedicated ServiceAccount bound to cluster-admin (so the apiserver's audit log
attributes every request to one controller) with QPS/burst at both managers' default (500/500), no
leader election, and serve their own admission webhooks on 127.0.0.1 behind the same URL webhook
configurations (``webhooks.configurations.render_for_url``): ours writes them itself in dev URL mode,
upstream's are applied here with the CA of the serving certificate written into its cert dir.
Before a scenario starts, a probe pod proves the webhooks answer (the previous controller is gone).
"""

from __future__ import annotations

import contextlib
import io
import pstats
import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml
from tests.support.manager import ManagerProcess
from tests.support.serviceaccount import binding, kubeconfig_as
from tests.support.wait import eventually

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster import tools
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import NAMESPACES, PODS, ResourceRef
from leaderworkerset.webhooks import certissue, certs
from leaderworkerset.webhooks.configurations import render_for_url

OURS, UPSTREAM = "ours", "upstream"
CONTROLLERS = (OURS, UPSTREAM)
SERVICE_ACCOUNTS = {OURS: "bench-ours", UPSTREAM: "bench-upstream"}
PROBE_NAMESPACE = "bench-probe"
SERVICE_ACCOUNTS_REF = ResourceRef("", "v1", "ServiceAccount", "serviceaccounts", namespaced=True)
CLUSTER_ROLE_BINDINGS = ResourceRef(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
REFS = {"MutatingWebhookConfiguration": certs.MUTATING_CONFIGURATIONS}
REFS["ValidatingWebhookConfiguration"] = certs.VALIDATING_CONFIGURATIONS


def username(controller: str) -> str:
    return f"system:serviceaccount:{c.DEFAULT_NAMESPACE}:{SERVICE_ACCOUNTS[controller]}"


async def create_identities(api: KubeClient) -> None:
    for body in (
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": c.DEFAULT_NAMESPACE}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROBE_NAMESPACE}},
    ):
        with contextlib.suppress(ApiStatusError):
            await api.create(NAMESPACES, body)
    for account in SERVICE_ACCOUNTS.values():
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}}
        with contextlib.suppress(ApiStatusError):
            await api.create(SERVICE_ACCOUNTS_REF, sa, c.DEFAULT_NAMESPACE)
        await api.apply(CLUSTER_ROLE_BINDINGS, binding(account, "cluster-admin", account))


class UpstreamManager(ManagerProcess):
    """Upstream's Go manager (sigs.k8s.io/lws v0.9.0): controllers and webhooks, no leader election."""

    def __init__(self, cluster: LocalCluster, binary: Path, name: str, kubeconfig: Path) -> None:
        super().__init__(cluster, name, kubeconfig=kubeconfig)
        self.binary = binary
        self.artifacts = certissue.generate(certs.CertConfig(ip_addresses=("127.0.0.1",)), certs.utc_now())
        certs.write_cert_dir(self.cert_dir, self.artifacts)
        self.config_file = cluster.workdir / f"{name}.yaml"
        self.config_file.write_text(
            "apiVersion: config.lws.x-k8s.io/v1alpha1\nkind: Configuration\n"
            "leaderElection:\n  leaderElect: false\ninternalCertManagement:\n  enable: false\n"
            f"webhook:\n  port: {self.webhook_port}\n  host: 127.0.0.1\n  certDir: {self.cert_dir}\n"
        )

    def scrape(self) -> str:
        """Its /metrics: served over HTTPS behind the API server's authentication and authorisation
        (controller-runtime's secure metrics; v0.9.0 has no flag to turn them off), so the request
        carries the account's token; the serving certificate is self-signed."""
        token = yaml.safe_load(self.kubeconfig.read_text())["users"][0]["user"]["token"]
        request = urllib.request.Request(
            f"https://127.0.0.1:{self.metrics_port}/metrics", headers={"Authorization": f"Bearer {token}"}
        )
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(request, timeout=5, context=insecure) as resp:
            return str(resp.read().decode())

    @property
    def argv(self) -> list[str]:
        return [
            str(self.binary),
            f"--kubeconfig={self.kubeconfig}",
            f"--config={self.config_file}",
            "--leader-elect=false",
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
            "--zap-devel=false",
        ]


class ProfiledManager(ManagerProcess):
    """Ours under cProfile (`--profile DIR`): the stats are written when the manager exits on
    SIGTERM. Profiling slows it down, so a profiled run's figures are not comparable."""

    def __init__(self, cluster: LocalCluster, name: str, kubeconfig: Path, profile: Path) -> None:
        super().__init__(cluster, name, kubeconfig=kubeconfig)
        self.profile = profile

    @property
    def argv(self) -> list[str]:
        command = super().argv[len(self.python) :]
        return [*self.python, "-m", "cProfile", "-o", str(self.profile), *command]


def profile_summary(stats_file: Path, lines: int = 30) -> str:
    """The functions with the most own time, then the most cumulative time (pstats text)."""
    out = io.StringIO()
    stats = pstats.Stats(str(stats_file), stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(lines)
    stats.sort_stats("cumulative").print_stats(lines)
    return out.getvalue()


@dataclass
class Running:
    controller: str
    process: ManagerProcess

    @property
    def pid(self) -> int:
        return self.process.pid


async def start(
    api: KubeClient, cluster: LocalCluster, controller: str, run: int, profile_dir: Path | None = None
) -> Running:
    kubeconfig = kubeconfig_as(cluster, SERVICE_ACCOUNTS[controller], cluster.workdir / f"kc-{controller}")
    name = f"bench-{controller}-{run}"
    process: ManagerProcess
    if controller == OURS:
        if profile_dir is None:
            process = ManagerProcess(cluster, name, kubeconfig=kubeconfig)
        else:
            process = ProfiledManager(cluster, name, kubeconfig, profile_dir / f"{name}.prof")
        await process.start()
    else:
        upstream = UpstreamManager(cluster, tools.ensure_tool(tools.UPSTREAM_LWS), name, kubeconfig)
        await upstream.start()
        for configuration in render_for_url("127.0.0.1", upstream.webhook_port, upstream.artifacts.ca_cert):
            await api.apply(REFS[configuration["kind"]], configuration)
        process = upstream
    await webhooks_answer(api, process.webhook_port)
    return Running(controller, process)


def _probe(index: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"probe-{index}",
            "labels": {c.LABEL_SET_NAME: "probe", c.LABEL_WORKER_INDEX: "0"},
            "annotations": {c.ANNOTATION_SIZE: "1"},
        },
        "spec": {"containers": [{"name": "m", "image": "x"}], "nodeName": "no-such-node"},
    }


async def webhooks_answer(api: KubeClient, port: int) -> None:
    """The configurations call `port`, and a pod create comes back mutated by that server."""
    counter = iter(range(1_000_000))

    async def mutated() -> bool:
        for ref in REFS.values():
            for configuration in await api.list(ref, None):
                if configuration["metadata"]["name"] not in (
                    c.MUTATING_WEBHOOK_CONFIGURATION_NAME,
                    c.VALIDATING_WEBHOOK_CONFIGURATION_NAME,
                ):
                    continue
                for webhook in configuration["webhooks"]:
                    assert f":{port}/" in webhook["clientConfig"].get("url", ""), "not pointed here yet"
        index = next(counter)
        try:
            created = await api.create(PODS, _probe(index), PROBE_NAMESPACE)
        except ApiStatusError as err:
            raise AssertionError(f"probe pod refused: {err}") from err
        with contextlib.suppress(ApiStatusError):
            await api.delete(PODS, PROBE_NAMESPACE, f"probe-{index}")
        return c.LABEL_GROUP_KEY in created["metadata"].get("labels", {})

    await eventually(mutated, timeout=120, interval=0.5, message="webhooks of the new controller")


async def stop(running: Running) -> None:
    await running.process.stop()
    if isinstance(running.process, ProfiledManager) and running.process.profile.exists():
        summary = running.process.profile.with_suffix(".txt")
        summary.write_text(profile_summary(running.process.profile))
