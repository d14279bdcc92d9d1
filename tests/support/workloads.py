"""Support for the workload examples on real nodes (docs/examples/ray, docs/examples/jax): their objects
as `kubectl kustomize` builds them from the repository, their images imported into the running nodes,
requests to a leader or through the set's Service (from inside a node, where Service addresses exist),
and a runtime process killed from the host, as the kernel's OOM killer or a crash would stop it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.realnodes import addresses, fleet, network, workloads
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import CORE_EVENTS, LEADERWORKERSETS, PODS, SERVICES
from tests.support.cli import kubectl
from tests.support.objects import is_ready, labels, uid
from tests.support.realnodes import REPO, lws_available
from tests.support.wait import LONG_TIMEOUT, eventually

Obj = dict[str, Any]
Groups = dict[str, dict[str, Obj]]  # every group's pods by worker index, by group index
EXAMPLES = REPO / "docs" / "examples"
SERVE_PORT = 8000
MODEL_VERSION = "MODEL_VERSION"  # the examples' model: a new value is a new version to roll out


@dataclass(frozen=True)
class Example:
    """One example as the tests see it: its names, its request, and its processes."""

    runtime: str  # the directory under docs/examples and the image's name in WORKLOAD_IMAGES
    size: int  # pods per group, as the manifest says
    path: str  # the request a client sends
    leader_process: str  # what identifies the runtime process on the leader (its command line)
    worker_process: str  # ... on a worker

    @property
    def name(self) -> str:  # the LeaderWorkerSet
        return self.runtime

    @property
    def service(self) -> str:  # the leaders' Service
        return f"{self.runtime}-leader"

    @property
    def image(self) -> str:
        return workloads.WORKLOAD_IMAGES[self.runtime]

    def pods_that_took_part(self, answer: Obj) -> list[str]:
        """The pods an answer says computed it, leader included."""
        if self.runtime == "ray":
            return sorted(node["pod"] for node in answer["nodes"])
        return sorted(answer["pods"])


RAY = Example("ray", 2, "/run", leader_process="gcs_server", worker_process="/raylet/raylet")
JAX = Example("jax", 3, "/generate?prompt=leaderworkerset", "jax_group.py", "jax_group.py")
BY_RUNTIME = {e.runtime: e for e in (RAY, JAX)}


# --- images and objects -------------------------------------------------------------------------------

_IMPORTED: set[tuple[str, str]] = set()


def ensure_image(cluster: LocalCluster, example: Example) -> None:
    """The example's image on every node of the cluster: built once (cached), imported once per cluster."""
    key = (str(cluster.workdir), example.runtime)
    if key in _IMPORTED:
        return
    archive = workloads.ensure_archive(example.runtime)
    fleet.import_into_running(cluster.workdir, cluster.node_bindir, cluster.state.real_nodes, [archive])
    _IMPORTED.add(key)


async def rendered(cluster: LocalCluster, example: Example) -> list[Obj]:
    """The example's objects exactly as `kubectl apply -k docs/examples/<runtime>` would send them."""
    built = await kubectl(cluster, "kustomize", str(EXAMPLES / example.runtime))
    return [doc for doc in yaml.safe_load_all(built) if doc]


def lws_of(objects: list[Obj]) -> Obj:
    return next(o for o in objects if o["kind"] == "LeaderWorkerSet")


def every_container(lws: Obj) -> list[Obj]:
    """The containers of the set's leader and worker templates (the objects themselves, to change)."""
    spec = lws["spec"]["leaderWorkerTemplate"]
    return [*spec["leaderTemplate"]["spec"]["containers"], *spec["workerTemplate"]["spec"]["containers"]]


def set_model_version(lws: Obj, version: str) -> None:
    """A new model version in every container of the set (what a rollout of a new model changes)."""
    for container in every_container(lws):
        for env in container.get("env") or []:
            if env["name"] == MODEL_VERSION:
                env["value"] = version


def second_tag(cluster: LocalCluster, example: Example) -> str:
    """The example's image under a second name on every node (the same content): an image-only change
    to roll out without building anything."""
    ensure_image(cluster, example)
    target = f"{example.image}-retagged"
    fleet.tag_image(cluster.workdir, cluster.node_bindir, cluster.state.real_nodes, example.image, target)
    return target


async def apply_example(
    cluster: LocalCluster, ns: str, example: Example, change: Callable[[Obj], None] | None = None
) -> None:
    """`kubectl apply -k docs/examples/<runtime> -n NS`, or with `change` made to its LeaderWorkerSet
    first (an annotation, more replicas): the rest of the example as it is."""
    ensure_image(cluster, example)
    if change is None:
        await kubectl(cluster, "apply", "-n", ns, "-k", str(EXAMPLES / example.runtime))
        return
    objects = await rendered(cluster, example)
    change(lws_of(objects))
    await kubectl(cluster, "apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump_all(objects))


# --- groups -------------------------------------------------------------------------------------------

# Ray needs about a minute to start a group on 2 busy cores; a cold start of every group takes longer.
FORMATION_TIMEOUT = LONG_TIMEOUT * 3


async def groups_of(api: KubeClient, ns: str, example: Example) -> Groups:
    """Every group's pods by worker index, by group index."""
    pods = await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={example.name}")
    groups: Groups = {}
    for pod in pods:
        groups.setdefault(labels(pod)[c.LABEL_GROUP_INDEX], {})[labels(pod)[c.LABEL_WORKER_INDEX]] = pod
    return groups


async def available(api: KubeClient, ns: str, example: Example) -> Groups:
    """Every group whole and Ready, the set Available: the groups by index."""
    await eventually(
        lambda: lws_available(api, ns, example.name), timeout=FORMATION_TIMEOUT, message="set Available"
    )
    groups = await groups_of(api, ns, example)
    assert all(whole_and_ready(g, example.size) for g in groups.values()), groups
    return groups


def names(group: dict[str, Obj]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in group.values())


def whole_and_ready(group: dict[str, Obj], size: int) -> bool:
    return len(group) == size and all(
        is_ready(p) and not (p["metadata"].get("deletionTimestamp")) for p in group.values()
    )


def serving(groups: Groups) -> int:
    """Groups whose leader is Ready and not terminating: the ones the Service sends requests to."""
    return sum(
        1
        for group in groups.values()
        if "0" in group and is_ready(group["0"]) and not group["0"]["metadata"].get("deletionTimestamp")
    )


def describe(groups: Groups) -> dict[str, str]:
    """Each group's pods in one line (name@node:state), for a failure message."""

    def pod(p: Obj) -> str:
        state = "ready" if is_ready(p) else "unready"
        if p["metadata"].get("deletionTimestamp"):
            state = "terminating"
        return f"{p['metadata']['name']}@{p['spec'].get('nodeName', '-')}:{state}"

    return {g: " ".join(pod(p) for _, p in sorted(group.items())) for g, group in sorted(groups.items())}


def uids(group: dict[str, Obj]) -> dict[str, str]:
    return {index: uid(pod) for index, pod in group.items()}


def placement(group: dict[str, Obj]) -> dict[str, tuple[str, str, str]]:
    """Each pod's UID, node and IP: what an in-place restart keeps."""
    return {i: (uid(p), p["spec"]["nodeName"], p["status"].get("podIP", "")) for i, p in group.items()}


def _stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def ready_since(pod: Obj) -> datetime:
    """When the pod last turned Ready (the API's clock, whole seconds)."""
    return _stamp(next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")["lastTransitionTime"])


def last_start(pod: Obj) -> datetime:
    """When the last of the pod's running containers started (the API's clock, whole seconds)."""
    statuses = pod["status"]["containerStatuses"]
    return max(_stamp(s["state"]["running"]["startedAt"]) for s in statuses if "running" in s["state"])


def brief(entries: list[Obj]) -> list[tuple[Any, ...]]:
    """Ledger entries in one line each, for a failure message."""
    keys = ("time", "group", "action", "cause", "pod", "exitCode", "node", "leaderUID")
    return [tuple(e.get(k) for k in keys) for e in entries]


def restarts(pod: Obj) -> int:
    return sum(
        int(s.get("restartCount") or 0) for s in (pod.get("status") or {}).get("containerStatuses") or []
    )


# --- serving while things change ----------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    at: float  # wall clock, as the load client's records
    serving: int
    groups: dict[str, str]  # each group's pods in one line, for the failure message


@asynccontextmanager
async def sampled(api: KubeClient, ns: str, example: Example) -> AsyncIterator[list[Sample]]:
    """The serving groups (and every pod's state) about every 0.2 s while the block runs."""
    samples: list[Sample] = []

    async def sample() -> None:
        while True:
            groups = await groups_of(api, ns, example)
            samples.append(Sample(time.time(), serving(groups), describe(groups)))
            await asyncio.sleep(0.2)

    task = asyncio.create_task(sample())
    try:
        yield samples
    finally:
        task.cancel()


def below(samples: list[Sample], floor: int) -> list[Sample]:
    return [s for s in samples if s.serving < floor]


async def events_text(api: KubeClient, ns: str) -> str:
    """The namespace's events in time order, one line each (who did what to which object, and when),
    for a failure message."""
    events = await api.list(CORE_EVENTS, ns)

    def when(event: Obj) -> str:
        return str(event.get("eventTime") or event.get("lastTimestamp") or event.get("firstTimestamp") or "")

    return "\n".join(
        f"{when(e)} {e['involvedObject'].get('kind')}/{e['involvedObject'].get('name')} {e.get('reason')}: "
        f"{e.get('message', '')[:160]}"
        for e in sorted(events, key=when)
    )


def failures(results: list[Obj], samples: list[Sample]) -> list[str]:
    """Each failed request in one line, with the groups as last sampled before it (where the client's
    request could have gone): empty when every request succeeded."""
    lines = []
    for result in results:
        if result["ok"]:
            continue
        seen = max((s for s in samples if s.at <= result["t"]), key=lambda s: s.at, default=None)
        state = f"serving {seen.serving} {seen.groups} ({result['t'] - seen.at:.1f}s before)" if seen else "-"
        lines.append(f"{result['t']:.2f} {result['error'] or result['status']} | {state}")
    return lines


def versions(results: list[Obj]) -> dict[str, int]:
    """How many answers each model version gave."""
    counted: dict[str, int] = {}
    for result in results:
        if result["ok"]:
            counted[result["body"]["version"]] = counted.get(result["body"]["version"], 0) + 1
    return counted


async def rolled_out(
    api: KubeClient, ns: str, example: Example, generation: int, replicas: int, check: Callable[[Obj], bool]
) -> bool:
    """The rollout of `generation` is done: every group updated, whole and Ready, every pod passes
    `check`, and the set Available; otherwise an AssertionError says what is missing."""
    lws = await api.get(LEADERWORKERSETS, ns, example.name)
    status = lws.get("status") or {}
    progress = (status.get("observedGeneration"), status.get("updatedReplicas"))
    assert progress == (generation, replicas), f"(observedGeneration, updatedReplicas) {progress}"
    groups = await groups_of(api, ns, example)
    assert sorted(groups) == sorted(str(i) for i in range(replicas)), describe(groups)
    for index, group in groups.items():
        assert whole_and_ready(group, example.size), describe(groups)
        for pod in group.values():
            assert check(pod), f"group {index}: {pod['metadata']['name']} {pod['status']}"
    return await lws_available(api, ns, example.name)


def on_model_version(version: str) -> Callable[[Obj], bool]:
    """Whether a pod runs `version` of the model."""
    return lambda pod: {"name": MODEL_VERSION, "value": version} in pod["spec"]["containers"][0]["env"]


async def off_node(api: KubeClient, ns: str, example: Example, node: str, replicas: int) -> bool:
    """Every group whole, Ready and without a pod on `node` (a drain's end, seen from the groups)."""
    groups = await groups_of(api, ns, example)
    return sorted(groups) == sorted(str(i) for i in range(replicas)) and all(
        whole_and_ready(g, example.size) and node not in {p["spec"]["nodeName"] for p in g.values()}
        for g in groups.values()
    )


def busiest_node(groups: Groups) -> str:
    """The node holding pods of the most groups: its drain disrupts the most."""
    nodes = [{p["spec"]["nodeName"] for p in g.values()} for g in groups.values()]
    return max(sorted(set().union(*nodes)), key=lambda n: sum(1 for on in nodes if n in on))


async def drain(cluster: LocalCluster, node: str) -> None:
    """`kubectl drain` as an operator runs it before maintenance; returns once every pod was evicted."""
    await kubectl(cluster, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=600s")


async def uncordon(cluster: LocalCluster, node: str) -> None:
    await kubectl(cluster, "uncordon", node)


# --- requests -----------------------------------------------------------------------------------------


def ask(ip: str, example: Example, timeout: float = 30) -> Obj:
    """One request to a leader pod at its address (the host routes every pod range to its node)."""
    with urllib.request.urlopen(f"http://{ip}:{SERVE_PORT}{example.path}", timeout=timeout) as answer:
        return dict(json.loads(answer.read()))


async def service_url(api: KubeClient, ns: str, example: Example) -> str:
    service = await api.get(SERVICES, ns, example.service)
    return f"http://{service['spec']['clusterIP']}:{SERVE_PORT}{example.path}"


@dataclass
class Load:
    """Requests sent by tests/support/loadclient.py from inside a node; `results()` reads them so far."""

    out: Path
    proc: subprocess.Popen[bytes]

    def results(self) -> list[Obj]:
        text = self.out.read_text() if self.out.exists() else ""
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def stop(self) -> list[Obj]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        return self.results()


@contextmanager
def load_through(url: str, *, node: int = 1, workers: int = 2, count: int | None = None) -> Iterator[Load]:
    """Keep requesting `url` from real node `node`'s network namespace until the block ends."""
    fd, name = tempfile.mkstemp(prefix="lws-load-", suffix=".jsonl")
    os.close(fd)
    argv = [sys.executable, "-m", "tests.support.loadclient", url, name, f"--workers={workers}"]
    if count is not None:
        argv.append(f"--count={count}")
    real = addresses.RealNode(node)
    proc = subprocess.Popen(network.in_netns(real.netns, argv), cwd=REPO)
    load = Load(Path(name), proc)
    try:
        yield load
    finally:
        load.stop()
        Path(name).unlink(missing_ok=True)


def through_service(url: str, count: int) -> list[Obj]:
    """`count` requests through the Service, one after another; every answer."""
    with load_through(url, workers=1, count=count) as load:
        load.proc.wait(timeout=count * 30)
        return load.results()


# --- processes ----------------------------------------------------------------------------------------


def runtime_pids(pod: Obj, needle: str) -> list[int]:
    """Host PIDs of the pod's processes whose command line contains `needle`: the kubelet puts each
    pod's containers in a cgroup named after the pod's UID (cgroupfs driver)."""
    marker = f"pod{uid(pod)}"
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if marker not in (proc / "cgroup").read_text():
                continue
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # exited meanwhile
            continue
        if needle in cmdline:
            found.append(int(proc.name))
    return found


def kill_runtime(pod: Obj, needle: str) -> int:
    """SIGKILL the pod's runtime process (from the host, so a container's PID 1 dies too); its PID."""
    pids = runtime_pids(pod, needle)
    assert len(pids) == 1, f"{pod['metadata']['name']}: processes matching {needle!r}: {pids}"
    os.kill(pids[0], signal.SIGKILL)
    return pids[0]


@dataclass(frozen=True)
class Recovery:
    """A runtime process of group 0 killed and the group serving again."""

    before: Groups
    after: Groups
    killed: datetime  # when the process was killed
    seconds: float  # from the kill to group 0's leader answering with every pod of the group


async def crash_and_recover(
    api: KubeClient, ns: str, example: Example, victim_index: str, *, in_place: bool
) -> Recovery:
    """Kill the runtime process of group 0's pod `victim_index` and wait until the group serves again:
    recreated (every pod new) or, with `in_place`, restarted where it stands (the same pods, nodes and
    IPs, every container restarted; a pod recreated or moved fails at once). Serving means its leader
    Ready and answering a request that every pod of the group took part in."""
    before = await available(api, ns, example)
    old = set(uids(before["0"]).values())
    restarted = {i: restarts(p) for i, p in before["0"].items()}
    victim = before["0"][victim_index]
    killed, killed_at = time.monotonic(), datetime.now(UTC)
    kill_runtime(victim, example.leader_process if victim_index == "0" else example.worker_process)

    async def back() -> Groups | None:
        groups = await groups_of(api, ns, example)
        group = groups.get("0", {})
        if in_place:
            assert placement(group) == placement(before["0"]), "a pod was recreated or moved"
            again = all(restarts(p) > restarted[i] for i, p in group.items())
        else:
            again = not old & set(uids(group).values())
        return groups if again and whole_and_ready(group, example.size) else None

    after: Groups = await eventually(back, timeout=FORMATION_TIMEOUT, interval=0.5, message="group 0 back")
    answer = await asyncio.to_thread(ask, after["0"]["0"]["status"]["podIP"], example)
    seconds = time.monotonic() - killed
    assert example.pods_that_took_part(answer) == names(after["0"]), answer
    return Recovery(before, after, killed_at, seconds)


async def remove_example(api: KubeClient, ns: str, example: Example) -> None:
    """Delete the example's set and wait until its pods are gone (their drain included)."""
    try:
        await api.delete(LEADERWORKERSETS, ns, example.name)
    except ApiStatusError as err:
        if err.code != 404:
            raise

    async def gone() -> bool:
        return not await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={example.name}")

    await eventually(gone, timeout=LONG_TIMEOUT, interval=0.5, message=f"{example.name}'s pods gone")
