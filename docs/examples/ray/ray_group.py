"""One Ray cluster per LeaderWorkerSet group, in the shape of upstream's vLLM multi-node example.

    python3 ray_group.py leader [RAY START FLAGS...]   # in the leader pod (LWS_WORKER_INDEX=0)
    python3 ray_group.py worker [RAY START FLAGS...]   # in every worker pod

The leader starts the Ray head (`ray start --head --port=6379 --block`, as a child), waits until
LWS_GROUP_SIZE nodes are alive (FORMATION_TIMEOUT_SECONDS, default 300: past it the container exits 1
and, under RecreateGroupOnPodRestart, the whole group is recreated), and only then listens on SERVE_PORT
(default 8000): its TCP readiness probe passes once the group formed. `GET /run` runs one Ray task on
each node of the group and answers which pods ran them.

A worker waits (the same timeout) until the head accepts connections, then runs
`ray start --address=$LWS_LEADER_ADDRESS:6379 --block`. Once a node started, `ray start --block` exits
non-zero when one of its Ray processes dies, and so does the container (leader or worker). A start that
fails before its node started is tried again until the formation timeout: Ray waits only 30 s for a new
raylet to register, which a busy machine can exceed.

SIGTERM drains: the leader stops accepting, finishes the requests in flight and exits 0; a worker keeps
its node in the cluster until its leader stopped serving (its group is going away with it), so that no
request in flight loses a node. A worker whose head went away waits for its own SIGTERM rather than
exiting: the kubelet would restart it, and under RecreateGroupOnPodRestart a restart recreates the group.

Standard library and Ray only; the image (lws.local/ray) is generic and this file comes in a ConfigMap.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GCS_PORT = 6379
SERVE_PORT = int(os.environ.get("SERVE_PORT", "8000"))
FORMATION_TIMEOUT = float(os.environ.get("FORMATION_TIMEOUT_SECONDS", "300"))
TASK_TIMEOUT = float(os.environ.get("TASK_TIMEOUT_SECONDS", "30"))
# How long a terminating worker waits for its leader to stop serving (a worker evicted on its own does
# not wait for ever); keep it below the pod's terminationGracePeriodSeconds.
WORKER_DRAIN_TIMEOUT = float(os.environ.get("WORKER_DRAIN_TIMEOUT_SECONDS", "20"))
GROUP_SIZE = int(os.environ.get("LWS_GROUP_SIZE", "1"))
LEADER_ADDRESS = os.environ.get("LWS_LEADER_ADDRESS", "127.0.0.1")
MODEL_VERSION = os.environ.get("MODEL_VERSION", "")


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} [{socket.gethostname()}] {message}", flush=True)


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:  # not resolvable yet, refused, or timed out
        return False


def wait_until(what: str, done: Any, deadline: float) -> None:
    """Poll `done()` once a second until it is true; past the deadline, exit 1 (formation failed)."""
    while not done():
        if time.monotonic() > deadline:
            log(f"{what}: not within {FORMATION_TIMEOUT:.0f}s, giving up")
            sys.exit(1)
        time.sleep(1)


# --- leader -------------------------------------------------------------------------------------------


def alive_nodes() -> list[dict[str, Any]]:
    import ray

    return [n for n in ray.nodes() if n.get("Alive")]


def run_everywhere() -> dict[str, Any]:
    """One task pinned to each alive node; which pod (and LWS worker index) ran each."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=1)
    def where() -> dict[str, str]:  # runs in the node's worker process, with its pod's environment
        return {
            "pod": socket.gethostname(),
            "workerIndex": os.environ.get("LWS_WORKER_INDEX", ""),
            "version": os.environ.get("MODEL_VERSION", ""),
        }

    nodes = alive_nodes()
    refs = [
        where.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
        for n in nodes
    ]
    ran = ray.get(refs, timeout=TASK_TIMEOUT)
    nodes_ran = sorted(ran, key=lambda r: int(r["workerIndex"] or 0))
    return {"leader": socket.gethostname(), "version": MODEL_VERSION, "nodes": nodes_ran}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path != "/run":
            self.send_error(404, "GET /run")
            return
        try:
            status, body = 200, run_everywhere()
        except Exception as err:  # a node lost mid-request: the client sees it, the server goes on
            status, body = 503, {"error": f"{type(err).__name__}: {err}"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # one line per request is noise here
        pass


def serve(head: subprocess.Popen[str]) -> None:
    """Serve on SERVE_PORT until SIGTERM, then drain: stop accepting, finish what is in flight. If the
    head's `ray start --block` exits (a Ray process of the head died), exit 1 at once."""
    server = ThreadingHTTPServer(("", SERVE_PORT), Handler)
    server.daemon_threads = False  # server_close() joins the requests in flight
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log(f"group formed ({GROUP_SIZE} nodes): serving on :{SERVE_PORT}")
    while not stop.wait(0.5):
        if head.poll() is not None:
            log(f"`ray start --head --block` exited {head.returncode}: a Ray process of the head died")
            os._exit(1)  # at once: requests in flight cannot finish without the head
    log("SIGTERM: draining")
    server.shutdown()
    server.server_close()
    log("drained")


def leader(flags: list[str]) -> None:
    import ray

    deadline = time.monotonic() + FORMATION_TIMEOUT
    head = start_node(["--head", f"--port={GCS_PORT}", *flags], deadline)
    ray.init(address=f"{LEADER_ADDRESS}:{GCS_PORT}", logging_level="WARNING")
    wait_until(f"{GROUP_SIZE} alive Ray nodes", lambda: len(alive_nodes()) >= GROUP_SIZE, deadline)
    serve(head)


# --- every node ---------------------------------------------------------------------------------------


# The `ray start --block` processes this program waits for; every other child it may reap.
OWN_CHILDREN: set[int] = set()


def reap_orphans() -> None:
    """As a container's first process this program adopts every orphaned Ray process (a failed start's,
    `ray stop`'s victims); reap those that exited, which would otherwise stay zombies."""
    while os.getpid() == 1:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) in OWN_CHILDREN:
                continue
            try:
                with open(f"/proc/{entry.name}/stat") as stat:
                    state, parent = stat.read().rsplit(")", 1)[1].split()[:2]
                if state == "Z" and parent == "1":
                    os.waitpid(int(entry.name), os.WNOHANG)
            except (OSError, ValueError):  # gone meanwhile
                continue
        time.sleep(5)


def pass_on(lines: Iterable[str]) -> None:
    for line in lines:
        print(line, end="", flush=True)


def start_node(args: list[str], deadline: float) -> subprocess.Popen[str]:
    """`ray start ARGS --block` as a child whose output goes on to ours; returns once Ray says the node
    started. A start that fails before (its raylet not registered within Ray's 30 s, on a busy machine)
    is cleaned up and tried again until the deadline."""
    while True:
        node = subprocess.Popen(
            ["ray", "start", *args, "--block"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        OWN_CHILDREN.add(node.pid)
        assert node.stdout is not None
        for line in node.stdout:
            print(line, end="", flush=True)
            if "Ray runtime started" in line:
                # Keep passing its output on, so that the pipe never fills and blocks it.
                threading.Thread(target=pass_on, args=(node.stdout,), daemon=True).start()
                return node
        node.wait()
        log(f"`ray start` exited {node.returncode} before its node started")
        subprocess.run(["ray", "stop", "--force"], check=False, capture_output=True)
        if time.monotonic() > deadline:
            log(f"no Ray node within {FORMATION_TIMEOUT:.0f}s, giving up")
            sys.exit(1)
        time.sleep(2)


# --- worker -------------------------------------------------------------------------------------------


def worker(flags: list[str]) -> None:
    deadline = time.monotonic() + FORMATION_TIMEOUT
    wait_until(
        f"the Ray head at {LEADER_ADDRESS}:{GCS_PORT}", lambda: reachable(LEADER_ADDRESS, GCS_PORT), deadline
    )
    node = start_node([f"--address={LEADER_ADDRESS}:{GCS_PORT}", *flags], deadline)
    drain_deadline: list[float] = []
    signal.signal(signal.SIGTERM, lambda *_: drain_deadline.append(time.monotonic() + WORKER_DRAIN_TIMEOUT))
    while node.poll() is None:
        if drain_deadline and (
            time.monotonic() > drain_deadline[0] or not reachable(LEADER_ADDRESS, SERVE_PORT)
        ):
            log("SIGTERM: the leader stopped serving (or the drain timed out): leaving")
            return  # the container ends with its first process, and every Ray process with it
        time.sleep(0.5)
    if not reachable(LEADER_ADDRESS, GCS_PORT):
        # The head is gone: the leader drained (its pod is being deleted, and this one goes with it) or
        # failed (its own exit recreates the group). Exiting now would have the kubelet restart this
        # container, a group failure to the LeaderWorkerSet: wait for SIGTERM instead.
        log(f"`ray start --block` exited {node.returncode}: the head is gone; waiting for SIGTERM")
        while not drain_deadline:
            time.sleep(0.5)
        return
    log(f"`ray start --block` exited {node.returncode}: a Ray process of this node died")
    sys.exit(node.returncode or 1)


if __name__ == "__main__":
    role, ray_flags = sys.argv[1], sys.argv[2:]
    threading.Thread(target=reap_orphans, daemon=True).start()
    {"leader": leader, "worker": worker}[role](ray_flags)
    os._exit(0)  # drained or left: no Ray shutdown hooks; the container's end stops every Ray process
