"""Kueue beside a local cluster: its manager as a process, its CRDs and webhooks, and the vocabulary
of its LeaderWorkerSet integration for the tests.

    kueue = KueueManager(cluster, api)
    await kueue.install()      # CRDs, certificates, the process (ready), the webhook configurations
    await kueue.stop()

The manager is `sigs.k8s.io/kueue/cmd/kueue` built by devcluster/tools.py (`tools.KUEUE`). Its CRDs
(`config/components/crd/bases`, with the conversion webhooks that `crd/kustomization.yaml` patches in)
and webhook configurations (`config/components/webhook/manifests.yaml`, with the namespace selectors
of the kustomization beside it) are read from the module in Go's module cache; nothing is copied into
the repository. As everywhere in the local cluster, the webhooks are registered by URL
(`https://127.0.0.1:<port><path>`) with a CA this module makes, and Kueue's internal certificate
management is off.

With its certificate management off, Kueue v0.17.0 insists on a metrics serving pair at the fixed
path `/etc/kueue/metrics/certs` (even with metrics off). Rather than write into the host's /etc, the
process runs in its own user and mount namespace (`unshare`) where /etc is an overlay of the real
/etc and a directory of ours holding `kueue/metrics/certs`.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.crd.install import apply_crds, wait_established
from leaderworkerset.devcluster import tools
from leaderworkerset.devcluster.cluster import LocalCluster, free_port
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import NAMESPACES, PODS, ResourceRef
from leaderworkerset.webhooks import certissue, certs
from leaderworkerset.webhooks.certs import MUTATING_CONFIGURATIONS, VALIDATING_CONFIGURATIONS
from tests.support.wait import LONG_TIMEOUT, eventually

Obj = dict[str, Any]

MODULE = "sigs.k8s.io/kueue"
FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
NAMESPACE = "kueue-system"  # Kueue's own; the shipped webhooks leave it (and kube-system) alone
GROUP = "kueue.x-k8s.io"

# Kueue's label and annotation keys that the LeaderWorkerSet integration reads or writes.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
SUSPENDING_PARENT_ANNOTATION = "kueue.x-k8s.io/pod-suspending-parent"
ADMISSION_GATE = "kueue.x-k8s.io/admission"

RESOURCE_FLAVORS = ResourceRef(GROUP, "v1beta2", "ResourceFlavor", "resourceflavors", namespaced=False)
CLUSTER_QUEUES = ResourceRef(GROUP, "v1beta2", "ClusterQueue", "clusterqueues", namespaced=False)
LOCAL_QUEUES = ResourceRef(GROUP, "v1beta2", "LocalQueue", "localqueues")
WORKLOADS = ResourceRef(GROUP, "v1beta2", "Workload", "workloads")
PRIORITY_CLASSES = ResourceRef(
    GROUP, "v1beta2", "WorkloadPriorityClass", "workloadpriorityclasses", namespaced=False
)


# ----- names ------------------------------------------------------------------------------------
def workload_name(lws_name: str, lws_uid: str, group_index: str) -> str:
    """The Workload Kueue makes for one group: `leaderworkerset-<lws>-<group>-` + 5 hex digits of
    SHA-1 over kind, group, owner name and UID, one per line (jobframework's workload names)."""
    owner = f"{lws_name}-{group_index}"
    digest = hashlib.sha1(f"{c.LWS_KIND}\n{c.LWS_GROUP}\n{owner}\n{lws_uid}".encode()).hexdigest()
    prefix = f"{c.LWS_KIND.lower()}-{owner}"[: 253 - 1 - 5]
    return f"{prefix}-{digest[:5]}"


# ----- the module's manifests -------------------------------------------------------------------
def module_dir() -> Path:
    return tools.module_dir(MODULE, tools.KUEUE.version)


def _yaml_documents(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def crd_documents(url: str, ca_bundle: bytes) -> list[Obj]:
    """Kueue's CRDs; those its kustomization gives a conversion webhook get it by `url`."""
    crd_dir = module_dir() / "config" / "components" / "crd"
    kustomization = yaml.safe_load((crd_dir / "kustomization.yaml").read_text())
    converted = {
        patch["metadata"]["name"]
        for entry in kustomization.get("patches") or []
        for patch in _yaml_documents(crd_dir / entry["path"])
        if (patch.get("spec") or {}).get("conversion")
    }
    documents = [doc for path in sorted((crd_dir / "bases").glob("*.yaml")) for doc in _yaml_documents(path)]
    for doc in documents:
        if doc["metadata"]["name"] in converted:
            doc["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {
                        "url": f"{url}/convert",
                        "caBundle": base64.b64encode(ca_bundle).decode(),
                    },
                    "conversionReviewVersions": ["v1"],
                },
            }
    return documents


def webhook_configurations(url: str, ca_bundle: bytes) -> list[Obj]:
    """Kueue's two webhook configurations as shipped (named as the release names them), each
    webhook called at `url` + its path, with the kustomization's per-webhook patches applied."""
    webhook_dir = module_dir() / "config" / "components" / "webhook"
    patches: dict[str, Obj] = {}
    for entry in yaml.safe_load((webhook_dir / "kustomization.yaml").read_text()).get("patches") or []:
        for patch in yaml.safe_load_all(entry.get("patch") or ""):
            for webhook in (patch or {}).get("webhooks") or []:
                patches[webhook["name"]] = webhook
    configurations = _yaml_documents(webhook_dir / "manifests.yaml")
    for configuration in configurations:
        configuration["metadata"]["name"] = f"kueue-{configuration['metadata']['name']}"
        for webhook in configuration["webhooks"]:
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {
                "url": f"{url}{path}",
                "caBundle": base64.b64encode(ca_bundle).decode(),
            }
            webhook.update(patches.get(webhook["name"], {}))
    return configurations


# ----- the process ------------------------------------------------------------------------------
@dataclass(frozen=True)
class KueueOptions:
    frameworks: tuple[str, ...] = (FRAMEWORK,)
    feature_gates: str = "VisibilityOnDemand=false"  # its aggregated API server: not needed here
    leader_elect: bool = False  # Kueue's own e2e suite waits for its Lease


class KueueManager:
    """Kueue's manager as a process of `cluster` (log `logs/<name>.log`), no leader election."""

    def __init__(
        self,
        cluster: LocalCluster,
        api: KubeClient,
        name: str = "kueue-manager",
        options: KueueOptions | None = None,
    ) -> None:
        self.cluster = cluster
        self.api = api
        self.name = name
        self.options = options or KueueOptions()
        self.webhook_port = free_port()
        self.health_port = free_port()
        self.dir = cluster.workdir / name
        self.proc: subprocess.Popen[bytes] | None = None
        self.ca_bundle = b""

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.webhook_port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        return self.cluster.log_tail(self.name, lines)

    def _write_files(self) -> Path:
        """Certificates (the webhook pair, also used as the metrics pair) and the Configuration."""
        config = certs.CertConfig(
            namespace=NAMESPACE, service_name="kueue-webhook-service", ip_addresses=("127.0.0.1",)
        )
        artifacts = certissue.generate(config, dt.datetime.now(dt.UTC))
        self.ca_bundle = artifacts.ca_cert
        certs.write_cert_dir(self.dir / "webhook-certs", artifacts)
        certs.write_cert_dir(self.dir / "etc" / "kueue" / "metrics" / "certs", artifacts)
        configuration = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": NAMESPACE,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health_port}"},
            "metrics": {"bindAddress": "0"},
            "webhook": {
                "host": "127.0.0.1",
                "port": self.webhook_port,
                "certDir": str(self.dir / "webhook-certs"),
            },
            "leaderElection": {"leaderElect": self.options.leader_elect, "resourceNamespace": NAMESPACE},
            "internalCertManagement": {"enable": False},
            "clientConnection": {"qps": 50, "burst": 100},
            "integrations": {"frameworks": list(self.options.frameworks)},
        }
        path = self.dir / "config.yaml"
        path.write_text(yaml.safe_dump(configuration))
        return path

    def argv(self, binary: Path, config: Path) -> list[str]:
        # unshare execs sh, which execs the manager: one pid throughout, killed by `stop`.
        script = 'mount -t overlay overlay -o "lowerdir=$1:/etc" /etc && shift && exec "$@"'
        return [
            "unshare", "--user", "--map-root-user", "--mount",
            "sh", "-c", script, "kueue-etc", str(self.dir / "etc"),
            "env", f"KUBECONFIG={self.cluster.kubeconfig}",
            str(binary), f"--config={config}", f"--feature-gates={self.options.feature_gates}",
            f"--visibility-server-port={free_port()}", "--zap-log-level=info",
        ]  # fmt: skip

    def _ready(self) -> bool:
        if not self.running:
            code = self.proc.returncode if self.proc else None
            raise RuntimeError(f"{self.name} exited with {code}:\n{self.log_tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError) as err:
            raise AssertionError(f"/readyz: {err}") from err

    async def install(self) -> None:
        """Build (cached) and start Kueue with its CRDs; return once its webhooks are registered."""
        binary = await asyncio.to_thread(tools.ensure_tool, tools.KUEUE)
        if shutil.which("unshare") is None:
            raise RuntimeError("util-linux `unshare` is needed to run Kueue (see tests/support/kueue.py)")
        self.dir.mkdir(parents=True, exist_ok=True)
        config = self._write_files()
        names = await apply_crds(
            self.api.lightkube, await asyncio.to_thread(crd_documents, self.url, self.ca_bundle)
        )
        await wait_established(self.api.lightkube, names)
        await self.api.apply(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        self.proc = self.cluster.attach(self.name, self.argv(binary, config))
        await eventually(
            lambda: asyncio.to_thread(self._ready), timeout=LONG_TIMEOUT, interval=0.2, message=self.name
        )
        for configuration in await asyncio.to_thread(webhook_configurations, self.url, self.ca_bundle):
            kind = configuration["kind"]
            ref = (
                MUTATING_CONFIGURATIONS if kind == MUTATING_CONFIGURATIONS.kind else VALIDATING_CONFIGURATIONS
            )
            await self.api.apply(ref, configuration)

    async def stop(self, grace: float = 15.0) -> None:
        if self.proc is None or not self.running:
            return
        self.proc.terminate()
        try:
            await asyncio.to_thread(self.proc.wait, grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            await asyncio.to_thread(self.proc.wait, 30)


# ----- queues -----------------------------------------------------------------------------------
FLAVOR = "default-flavor"


def resource_flavor(name: str = FLAVOR) -> Obj:
    """A flavor without node labels: admitted pods keep their placement (kwok nodes carry none)."""
    return {"apiVersion": RESOURCE_FLAVORS.api_version, "kind": "ResourceFlavor", "metadata": {"name": name}}


def cluster_queue(name: str, cpu: str, flavor: str = FLAVOR) -> Obj:
    """`cpu` of nominal quota for every namespace; a higher priority preempts within the queue."""
    return {
        "apiVersion": CLUSTER_QUEUES.api_version,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
                }
            ],
            "preemption": {"withinClusterQueue": "LowerPriority"},
        },
    }


def local_queue(namespace: str, name: str, cluster_queue_name: str) -> Obj:
    return {
        "apiVersion": LOCAL_QUEUES.api_version,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue_name},
    }


def priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": PRIORITY_CLASSES.api_version,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _condition(obj: Obj, kind: str) -> bool:
    return any(
        cond.get("type") == kind and cond.get("status") == "True"
        for cond in (obj.get("status") or {}).get("conditions") or []
    )


async def queues_active(
    api: KubeClient, namespace: str, local_queue_name: str, cluster_queue_name: str
) -> None:
    """Wait until both queues report Active (Kueue's scheduler has them in its cache)."""

    async def active() -> bool:
        cq = await api.get(CLUSTER_QUEUES, None, cluster_queue_name)
        lq = await api.get(LOCAL_QUEUES, namespace, local_queue_name)
        assert _condition(cq, "Active"), f"ClusterQueue not active: {cq.get('status')}"
        assert _condition(lq, "Active"), f"LocalQueue not active: {lq.get('status')}"
        return True

    await eventually(active, timeout=LONG_TIMEOUT)


# ----- what the tests observe -------------------------------------------------------------------
@dataclass(frozen=True)
class WorkloadView:
    """What a test compares of one Workload."""

    name: str
    group: str  # the component-workload-index annotation
    admitted: bool
    cluster_queue: str
    pod_sets: tuple[tuple[str, int], ...]
    priority: int | None
    evicted: bool


def view(workload: Obj) -> WorkloadView:
    status = workload.get("status") or {}
    admission = status.get("admission") or {}
    return WorkloadView(
        name=workload["metadata"]["name"],
        group=(workload["metadata"].get("annotations") or {}).get(
            "kueue.x-k8s.io/component-workload-index", ""
        ),
        admitted=_condition(workload, "Admitted"),
        cluster_queue=admission.get("clusterQueue", ""),
        pod_sets=tuple((p["name"], p["count"]) for p in workload["spec"]["podSets"]),
        priority=workload["spec"].get("priority"),
        evicted=_condition(workload, "Evicted"),
    )


async def workloads_of(api: KubeClient, namespace: str, lws_uid: str) -> dict[str, WorkloadView]:
    """The Workloads Kueue made for one LeaderWorkerSet, by name (not deleting)."""
    items = await api.list(WORKLOADS, namespace, label_selector=f"{JOB_UID_LABEL}={lws_uid}")
    return {w["metadata"]["name"]: view(w) for w in items if not w["metadata"].get("deletionTimestamp")}


def gated(pod: Obj) -> bool:
    return any(g.get("name") == ADMISSION_GATE for g in pod["spec"].get("schedulingGates") or [])


async def pods_of(api: KubeClient, namespace: str, lws_name: str) -> list[Obj]:
    pods = await api.list(PODS, namespace, label_selector=f"{c.LABEL_SET_NAME}={lws_name}")
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def gated_groups(pods: list[Obj]) -> set[str]:
    """Group indexes of which at least one pod still carries Kueue's admission gate."""
    return {p["metadata"]["labels"][c.LABEL_GROUP_INDEX] for p in pods if gated(p)}
