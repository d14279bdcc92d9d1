"""A local Kubernetes control plane made of real components, without Docker.

Two shapes:

* ``apiserver``: etcd + kube-apiserver, like controller-runtime's envtest. The
  test plays the StatefulSet controller and the kubelet.
* ``full``: adds kube-controller-manager (StatefulSet, Deployment, ReplicaSet,
  garbage-collector, EndpointSlice, namespace, service-account controllers...),
  kube-scheduler and kwok, which turns Node objects into fake kubelets: pods
  scheduled onto them become Running/Ready after a configurable delay.

Every cluster has its own work dir (PKI, etcd data, logs, kubeconfig, a
``state.json`` with pids and ports) and its own free ports, so several can run
side by side (one per pytest-xdist worker).
"""

from __future__ import annotations

import base64
import functools
import json
import shutil
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Final, Literal

import yaml

from leaderworkerset.devcluster import components, kube, versions
from leaderworkerset.devcluster import pki as pki_mod
from leaderworkerset.devcluster.nodes import NodeSpec, default_nodes
from leaderworkerset.devcluster.processes import is_ours, spawn, terminate, wait_for
from leaderworkerset.devcluster.realnodes import addresses, fleet
from leaderworkerset.devcluster.supervisor import Supervisor

Shape = Literal["apiserver", "full"]
STATE_FILE = "state.json"

# Start order; teardown runs in reverse.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "pod-reaper")


class ClusterError(RuntimeError):
    """A component failed to start or become ready; carries the log tails."""


# The Kubernetes Workload API (scheduling.k8s.io/v1beta1 Workload + PodGroup) and kube-scheduler's
# gang scheduling are off by default in 1.37: one gate on every component, plus the API group version.
WORKLOAD_API_FEATURE_GATES: Final = "GenericWorkload=true"
WORKLOAD_API_RUNTIME_CONFIG: Final = "scheduling.k8s.io/v1beta1=true"
WORKLOAD_API_MINIMUM: Final = "v1.37"


@dataclass
class ClusterOptions:
    shape: Shape = "full"
    nodes: int = 4
    node_specs: list[NodeSpec] | None = None
    pod_ready_delay_ms: int = 0
    die_with_parent: bool = False
    feature_gates: str = ""
    runtime_config: str = ""
    start_timeout: float = 120.0
    # Extra kube-apiserver flags, e.g. an audit policy and log for the side-by-side benchmark.
    apiserver_args: tuple[str, ...] = ()
    # kwok also serves each fake node's kubelet resource metrics (/metrics/resource, from the usage
    # that pods' kwok.x-k8s.io/usage-cpu|memory annotations give) over HTTPS on 127.0.0.1, the
    # address and port every Node reports: what metrics-server scrapes (devcluster/metrics.py).
    kubelet_metrics: bool = False
    # Restart kube-scheduler and kube-controller-manager when they exit (LocalCluster._supervise).
    # For holders that stop the cluster only through LocalCluster.stop(), such as the test suite.
    supervise: bool = False
    # Real nodes (kubelet + containerd + runc) beside the kwok ones, `full` shape only (docs/real-nodes.md).
    real_nodes: int = 0
    # More image archives (OCI layout tars, e.g. the manager's) every real node imports at start.
    node_images: tuple[Path, ...] = ()

    def with_workload_api(self, kube_version: str | None = None) -> ClusterOptions:
        """These options plus the Workload API gates and runtime-config (kept if already given).

        Refused below 1.37: the API moved every release (1.35 v1alpha1, 1.36 v1alpha2 with a separate
        PodGroup) and LeaderWorkerSet v1, like upstream's, speaks only the 1.37 v1beta1 shape."""
        version = versions.resolve_kubernetes_version(kube_version)
        if not versions.at_least(version, WORKLOAD_API_MINIMUM):
            raise ClusterError(
                "the Workload API that LeaderWorkerSet uses (scheduling.k8s.io/v1beta1, gate "
                f"GenericWorkload) needs Kubernetes {WORKLOAD_API_MINIMUM.removeprefix('v')} or newer; "
                f"this cluster is {version}"
            )
        gates = ",".join(g for g in (self.feature_gates, WORKLOAD_API_FEATURE_GATES) if g)
        runtime = ",".join(r for r in (self.runtime_config, WORKLOAD_API_RUNTIME_CONFIG) if r)
        return replace(self, feature_gates=gates, runtime_config=runtime)


@dataclass
class ClusterState:
    name: str
    shape: Shape
    workdir: str
    bindir: str
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    # The API server's address: loopback, or the real nodes' bridge (realnodes/addresses.py).
    host: str = "127.0.0.1"
    real_nodes: int = 0

    @property
    def kubeconfig(self) -> Path:
        return Path(self.workdir) / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://{self.host}:{self.ports['kube-apiserver']}"

    def save(self) -> None:
        (Path(self.workdir) / STATE_FILE).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, workdir: Path) -> ClusterState:
        return cls(**json.loads((workdir / STATE_FILE).read_text()))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LocalCluster:
    """Start and stop one local control plane. Use ``start()``/``stop()`` or as a context manager."""

    def __init__(self, name: str, workdir: Path, bindir: Path, options: ClusterOptions | None = None) -> None:
        self.options = options or ClusterOptions()
        self.state = ClusterState(
            name=name, shape=self.options.shape, workdir=str(workdir), bindir=str(bindir)
        )
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._spawn_lock = threading.Lock()
        self.supervisor: Supervisor | None = None

    # -- paths -----------------------------------------------------------------------------------
    @property
    def workdir(self) -> Path:
        return Path(self.state.workdir)

    @property
    def bindir(self) -> Path:
        return Path(self.state.bindir)

    @property
    def kubeconfig(self) -> Path:
        return self.state.kubeconfig

    @property
    def logdir(self) -> Path:
        return self.workdir / "logs"

    @property
    def kubectl(self) -> Path:
        return self.bindir / "kubectl"

    @property
    def kubernetes_version(self) -> str:
        """The version of the binaries this cluster runs (from their build key)."""
        return versions.kubernetes_version_of(self.bindir)

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.logdir.mkdir(exist_ok=True)
        self.pki = pki_mod.generate(self.workdir / "pki")
        for component in COMPONENTS:
            self.state.ports[component] = free_port()
        self.state.ports["etcd-peer"] = free_port()
        if self.options.kubelet_metrics:
            self.state.ports["kubelet"] = free_port()
        try:
            if self.options.real_nodes:
                self.node_bindir = _prepare_real_nodes(self)
            self._write_kubeconfig()
            self._start_etcd()
            self._start_apiserver()
            if self.options.shape == "full":
                self._start_controller_manager()
                self._start_scheduler()
                self._start_kwok()
                self._start_reaper()
                self._wait_full_ready()
                if self.options.real_nodes:
                    _start_real_nodes(self)
                if self.options.supervise:
                    self._supervise()
        except (TimeoutError, OSError, subprocess.SubprocessError, RuntimeError) as err:
            report = self.log_report()
            self.stop()
            raise ClusterError(f"local cluster {self.state.name!r} did not start: {err}\n{report}") from err

    def stop(self) -> None:
        if self.supervisor:
            self.supervisor.stop()
        stop_state(self.state)
        self._procs.clear()

    def _starters(self) -> dict[str, Callable[[], None]]:
        """The restartable components, in the order an upgrade replaces them (API server first)."""
        return {
            "kube-apiserver": self._start_apiserver,
            "kube-controller-manager": self._start_controller_manager,
            "kube-scheduler": self._start_scheduler,
        }

    def _supervise(self) -> None:
        """Restart kube-controller-manager and kube-scheduler when they exit (supervisor.py)."""
        starters = {k: start for k, start in self._starters().items() if k != "kube-apiserver"}
        self.supervisor = Supervisor(self.state.name, self._procs, starters, self.logdir / "supervisor.log")
        self.supervisor.start()

    @property
    def restarts(self) -> dict[str, int]:
        """Restarts of supervised components, by component."""
        return self.supervisor.restarts if self.supervisor else {}

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver (SIGTERM, SIGKILL after a grace period) and start it again on the same
        port, as a control-plane upgrade or crash does; returns once /readyz answers again. Clients
        lose every connection and watch; its watch cache starts over from etcd."""
        self._restart("kube-apiserver", self._start_apiserver)

    def upgrade_control_plane(self, bindir: Path) -> None:
        """Replace apiserver, controller-manager and scheduler by `bindir`'s (another version), in a
        real upgrade's order (API server first); etcd, its data, kwok and every client stay."""
        # The supervisor would restart the components being replaced.
        supervised = self.supervisor is not None and self.supervisor.stop()
        self.state.bindir = str(bindir)
        for component, start in self._starters().items():
            self._restart(component, start)
        if supervised and self.supervisor:
            self.supervisor.start()

    def _restart(self, component: str, start: Callable[[], None]) -> None:
        """Stop `component` if it runs (the apiserver shape has no controllers) and start it again."""
        pid = self.state.pids.get(component)
        if pid is None:
            return
        proc = self._procs.pop(component, None)
        if is_ours(pid, self.state.workdir):
            terminate(pid)
        if proc is not None:
            proc.wait(timeout=30)
        start()

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (returned): a watch or list from any
        older resourceVersion that the API server cannot serve from its watch cache gets 410 Gone."""
        base = f"http://127.0.0.1:{self.state.ports['etcd']}/v3/kv"
        header = kube.etcd_post(f"{base}/range", {"key": base64.b64encode(b"/").decode(), "limit": 1})
        revision = int(header["header"]["revision"])
        kube.etcd_post(f"{base}/compaction", {"revision": str(revision), "physical": True})
        return revision

    def attach(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        """Run another process with the cluster (logs beside the components', stopped with them)."""
        proc = spawn(
            argv,
            log=self.logdir / f"{name}.log",
            cwd=self.workdir,
            die_with_parent=self.options.die_with_parent,
        )
        self.state.pids[name] = proc.pid
        self.state.save()
        return proc

    # -- components ------------------------------------------------------------------------------
    def _spawn(self, component: str, argv: list[str]) -> None:
        proc = spawn(
            argv,
            log=self.logdir / f"{component}.log",
            cwd=self.workdir,
            die_with_parent=self.options.die_with_parent,
        )
        with self._spawn_lock:  # the supervisor thread spawns too
            self._procs[component] = proc
            self.state.pids[component] = proc.pid
            self.state.save()

    def dead_component(self) -> str | None:
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                return f"{name} (exit code {proc.returncode})"
        return None

    def _start_etcd(self) -> None:
        port, peer = self.state.ports["etcd"], self.state.ports["etcd-peer"]
        self._spawn("etcd", components.etcd_argv(self.bindir, self.workdir, port, peer))
        wait_for(
            "etcd health",
            lambda: (
                b'"health":"true"'
                in urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
            ),
            timeout=self.options.start_timeout,
            alive=self.dead_component,
        )

    def _start_apiserver(self) -> None:
        argv = components.apiserver_argv(
            self.bindir,
            self.state.ports,
            self.pki,
            # Without a controller-manager nobody creates the `default` ServiceAccount.
            envtest_like=self.options.shape == "apiserver",
            feature_gates=self.options.feature_gates,
            runtime_config=self.options.runtime_config,
            extra_args=self.options.apiserver_args,
            real_nodes=bool(self.state.real_nodes),
        )
        self._spawn("kube-apiserver", argv)
        wait_for(
            "kube-apiserver /readyz",
            self._apiserver_ready,
            timeout=self.options.start_timeout,
            alive=self.dead_component,
        )

    def _start_controller_manager(self) -> None:
        argv = components.controller_manager_argv(
            self.bindir, self.kubeconfig, self.state.ports, self.pki, self.options.feature_gates
        )
        self._spawn("kube-controller-manager", argv)

    def _start_scheduler(self) -> None:
        path = self.workdir / "scheduler-config.yaml"
        path.write_text(yaml.safe_dump(components.scheduler_config(self.kubeconfig)))
        argv = components.scheduler_argv(
            self.bindir, path, self.kubeconfig, self.state.ports, self.options.feature_gates
        )
        self._spawn("kube-scheduler", argv)

    def _start_kwok(self) -> None:
        stages = self.workdir / "kwok-stages.yaml"
        metrics = self.options.kubelet_metrics
        stages.write_text(
            components.kwok_stage_config(
                self.bindir / "stages", self.options.pod_ready_delay_ms, kubelet_metrics=metrics
            )
        )
        argv = components.kwok_argv(
            self.bindir,
            self.kubeconfig,
            stages,
            kubelet_port=self.state.ports["kubelet"] if metrics else 0,
            pki=self.pki,
            real_nodes=bool(self.state.real_nodes),
        )
        self._spawn("kwok", argv)

    def _start_reaper(self) -> None:
        # Confirms pod deletions by UID in place of kwok's by-name pod-delete stage (see reaper.py).
        self._spawn(
            "pod-reaper",
            [
                sys.executable,
                "-m",
                "leaderworkerset.devcluster.reaper",
                f"--kubeconfig={self.kubeconfig}",
                f"--spare-node-prefix={addresses.NODE_NAME_PREFIX}",
            ],
        )

    def _wait_full_ready(self) -> None:
        timeout = self.options.start_timeout
        for component in ("kube-controller-manager", "kube-scheduler"):
            port = self.state.ports[component]
            wait_for(
                f"{component} /healthz",
                functools.partial(kube.healthz_insecure, port),
                timeout=timeout,
                alive=self.dead_component,
            )
        client = kube.RestClient.from_kubeconfig(self.kubeconfig)
        # The service-account controller creating `default` proves the controller-manager works.
        wait_for(
            "ServiceAccount default/default",
            lambda: client.get("/api/v1/namespaces/default/serviceaccounts/default") is not None,
            timeout=timeout,
            alive=self.dead_component,
        )
        specs = self.options.node_specs or default_nodes(self.options.nodes)
        for spec in specs:
            client.create("/api/v1/nodes", spec.manifest())
        wait_for(
            f"{len(specs)} Ready nodes",
            lambda: kube.ready_node_count(client) >= len(specs),
            timeout=timeout,
            alive=self.dead_component,
        )

    # -- helpers ---------------------------------------------------------------------------------
    def _apiserver_ready(self) -> bool:
        return kube.RestClient.from_kubeconfig(self.kubeconfig).get_raw("/readyz") == b"ok"

    def _write_kubeconfig(self) -> None:
        config = components.admin_kubeconfig(self.state.name, self.state.server, self.pki)
        self.kubeconfig.write_text(yaml.safe_dump(config))
        self.kubeconfig.chmod(0o600)

    def log_tail(self, component: str, lines: int = 30) -> str:
        path = self.logdir / f"{component}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def log_report(self, lines: int = 30) -> str:
        parts = []
        for component in COMPONENTS:
            tail = self.log_tail(component, lines)
            if tail:
                parts.append(
                    f"--- {component} (last {lines} lines of {self.logdir / component}.log) ---\n{tail}"
                )
        return "\n".join(parts)


def _prepare_real_nodes(cluster: LocalCluster) -> Path:
    """Before etcd starts: the real nodes' binaries, packages and network (realnodes/fleet.py)."""
    if cluster.options.shape != "full":
        raise ClusterError("real nodes need the `full` shape (a scheduler and controllers)")
    # Recorded before the network exists, so that a failed start still tears it down.
    cluster.state.real_nodes, cluster.state.host = cluster.options.real_nodes, addresses.HOST_ADDRESS
    cluster.state.save()
    return fleet.prepare(cluster.options.real_nodes, cluster.kubernetes_version)


def _start_real_nodes(cluster: LocalCluster) -> None:
    """Once the control plane answers: the real nodes Ready and cluster DNS serving."""
    fleet.start(
        cluster.state.real_nodes,
        workdir=cluster.workdir,
        bindir=cluster.node_bindir,
        pki=cluster.pki,
        kubeconfig=cluster.kubeconfig,
        extra_images=cluster.options.node_images,
        attach=cluster.attach,
        alive=cluster.dead_component,
        timeout=cluster.options.start_timeout,
    )


def stop_state(state: ClusterState) -> None:
    """Stop every recorded process of a cluster, leaving none behind.

    Processes attached on top of the control plane (e.g. the demo's manager)
    go first, then the components newest first.
    """
    attached = [name for name in state.pids if name not in COMPONENTS]
    for name in [*attached, *reversed(COMPONENTS)]:
        pid = state.pids.get(name)
        if pid and is_ours(pid, state.workdir):
            terminate(pid)
    state.pids.clear()
    if state.real_nodes:
        fleet.teardown(Path(state.workdir), state.real_nodes)
    if (Path(state.workdir) / STATE_FILE).exists():
        state.save()


def remove_workdir(state: ClusterState) -> None:
    shutil.rmtree(state.workdir, ignore_errors=True)
