"""One multi-process JAX program per LeaderWorkerSet group, in the rendezvous shape of the TPU pattern.

    python3 jax_group.py        # the same command in every pod of the group

Every process joins the group with `jax.distributed.initialize` (coordinator: the leader, at
$LWS_LEADER_ADDRESS:COORDINATOR_PORT; process $LWS_WORKER_INDEX of $LWS_GROUP_SIZE; past
FORMATION_TIMEOUT_SECONDS, default 300, it exits 1 and RecreateGroupOnPodRestart recreates the group).
Each process then builds its shard of a small tensor-parallel model (an embedding and MLP blocks whose
weights come from one fixed seed; each block's first matrix is split by columns and its second by rows
across the processes, and a cross-process sum joins them), and all run one warm-up forward pass. Only
then does the leader listen on SERVE_PORT (default 8000): its TCP readiness probe passes once the group
formed and computed.

`GET /generate?prompt=TEXT` (or `POST /generate` with `{"prompt": TEXT}`) is one forward pass of the
whole group: the leader broadcasts the request to every process through a collective (workers wait for
it in that collective), every process computes with its shard, and the answer names the next byte and
the ranks (and pods) that took part. When idle the leader broadcasts a no-op every IDLE_TICK_SECONDS,
so a lost process shows up as a failed collective within a tick and the group exits non-zero.

SIGTERM drains: the leader stops accepting, finishes the requests in flight, then broadcasts STOP and
exits 0. A worker ignores SIGTERM while its leader still serves (its group goes away with its leader), up
to WORKER_DRAIN_TIMEOUT_SECONDS; told to STOP it waits for its own SIGTERM, then exits 0 (never earlier:
the kubelet would restart it, and under RecreateGroupOnPodRestart a restart recreates the group).

Standard library, numpy and JAX only; the image (lws.local/jax) is generic and this file comes in a
ConfigMap.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import sys
import threading
import time
import urllib.parse
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

SERVE_PORT = int(os.environ.get("SERVE_PORT", "8000"))
COORDINATOR_PORT = int(os.environ.get("COORDINATOR_PORT", "8476"))
FORMATION_TIMEOUT = int(os.environ.get("FORMATION_TIMEOUT_SECONDS", "300"))
HEARTBEAT_TIMEOUT = int(os.environ.get("HEARTBEAT_TIMEOUT_SECONDS", "10"))
IDLE_TICK = float(os.environ.get("IDLE_TICK_SECONDS", "1"))
WORKER_DRAIN_TIMEOUT = float(os.environ.get("WORKER_DRAIN_TIMEOUT_SECONDS", "20"))
SIZE = int(os.environ.get("LWS_GROUP_SIZE", "1"))
RANK = int(os.environ.get("LWS_WORKER_INDEX", "0"))
LEADER_ADDRESS = os.environ.get("LWS_LEADER_ADDRESS", "127.0.0.1")
# The "model version": its weights come from a seed derived from it, so a new value is a new model.
MODEL_VERSION = os.environ.get("MODEL_VERSION", "v1")

# The model: bytes in, the next byte out. FFN is divisible by every group size up to 4 (and 6, 8).
VOCAB, DIM, FFN, LAYERS, MAX_LEN = 256, 64, 384, 2, 128
# What the leader broadcasts: [op, length, tokens...].
NOOP, FORWARD, STOP = 0, 1, 2
MESSAGE_LEN = 2 + MAX_LEN
HOSTNAME_LEN = 64


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} [{socket.gethostname()} rank {RANK}/{SIZE}] {message}", flush=True)


# --- the model ----------------------------------------------------------------------------------------


def full_weights() -> dict[str, np.ndarray]:
    """The whole model, the same in every process (one seed); each keeps only its shard on device."""
    rng = np.random.default_rng(zlib.crc32(MODEL_VERSION.encode()))
    return {
        "embed": rng.normal(0, 1, (VOCAB, DIM)).astype(np.float32),
        "w1": rng.normal(0, DIM**-0.5, (LAYERS, DIM, FFN)).astype(np.float32),
        "w2": rng.normal(0, FFN**-0.5, (LAYERS, FFN, DIM)).astype(np.float32),
    }


@dataclass
class Model:
    mesh: jax.sharding.Mesh
    params: dict[str, jax.Array]
    forward: Any = field(repr=False)


def build_model() -> Model:
    mesh = jax.make_mesh((SIZE,), ("tp",), devices=jax.devices())
    specs = {"embed": P(), "w1": P(None, None, "tp"), "w2": P(None, "tp", None)}
    full = full_weights()
    params = {
        name: jax.make_array_from_callback(
            full[name].shape, NamedSharding(mesh, spec), lambda i, a=full[name]: a[i]
        )
        for name, spec in specs.items()
    }

    def local(tokens: jax.Array, length: jax.Array, embed: jax.Array, w1: jax.Array, w2: jax.Array) -> Any:
        # Inside one process: w1 holds FFN/SIZE columns of each block's first matrix, w2 the same rows
        # of its second; the psum adds the partial outputs of every process (a gloo all-reduce).
        mask = (jnp.arange(MAX_LEN) < length)[:, None]
        vectors = embed[tokens]
        x0 = (vectors * mask).sum(0) / jnp.maximum(length, 1) + vectors[jnp.maximum(length - 1, 0)]
        x = x0
        for layer in range(LAYERS):
            x = x + jax.lax.psum(jax.nn.gelu(x @ w1[layer]) @ w2[layer], "tp")
        took_part = jax.lax.psum(jax.nn.one_hot(jax.lax.axis_index("tp"), SIZE, dtype=jnp.int32), "tp")
        return embed @ (x - x0), took_part  # the blocks' output alone: every shard counts

    sharded = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P(), P(), specs["embed"], specs["w1"], specs["w2"]),
        out_specs=(P(), P()),
    )
    return Model(mesh, params, jax.jit(sharded))


def run(model: Model, message: np.ndarray) -> tuple[int, list[int]]:
    """One forward pass of the group on a broadcast message: (the next byte, the ranks that computed)."""
    replicated = NamedSharding(model.mesh, P())
    tokens = jax.make_array_from_callback((MAX_LEN,), replicated, lambda i: message[2:][i])
    length = jax.make_array_from_callback((), replicated, lambda i: message[1])
    logits, took_part = model.forward(tokens, length, *model.params.values())
    ranks = np.asarray(took_part.addressable_data(0))
    return int(np.argmax(np.asarray(logits.addressable_data(0)))), [r for r in range(SIZE) if ranks[r]]


def encode(prompt: str) -> np.ndarray:
    data = prompt.encode()[-MAX_LEN:] or b" "
    message = np.zeros(MESSAGE_LEN, np.int32)
    message[0], message[1] = FORWARD, len(data)
    message[2 : 2 + len(data)] = np.frombuffer(data, np.uint8)
    return message


def pod_names() -> list[str]:
    """Every process's host name (its pod), gathered once through a collective."""
    name = np.zeros(HOSTNAME_LEN, np.uint8)
    raw = socket.gethostname().encode()[:HOSTNAME_LEN]
    name[: len(raw)] = np.frombuffer(raw, np.uint8)
    gathered = np.asarray(multihost_utils.process_allgather(name))
    return [bytes(row).rstrip(b"\0").decode() for row in gathered.reshape(SIZE, HOSTNAME_LEN)]


# --- the leader's server ------------------------------------------------------------------------------


@dataclass
class Request:
    message: np.ndarray
    done: threading.Event = field(default_factory=threading.Event)
    result: dict[str, Any] = field(default_factory=dict)


class Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the requests in flight
    requests: queue.Queue[Request]
    pods: list[str]


class Handler(BaseHTTPRequestHandler):
    server: Server

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/generate":
            self.answer(404, {"error": "GET /generate?prompt=TEXT or POST /generate {prompt}"})
            return
        self.generate(urllib.parse.parse_qs(url.query).get("prompt", [""])[0])

    def do_POST(self) -> None:
        if self.path != "/generate":
            self.answer(404, {"error": "POST /generate {prompt}"})
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.generate(str(json.loads(body or b"{}").get("prompt", "")))

    def generate(self, prompt: str) -> None:
        request = Request(encode(prompt))
        self.server.requests.put(request)
        request.done.wait()
        body = {"prompt": prompt, "version": MODEL_VERSION, **request.result}
        self.answer(200 if "error" not in request.result else 503, body)

    def answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # one line per request is noise here
        pass


def start_server(pods: list[str]) -> Server:
    server = Server(("", SERVE_PORT), Handler)
    server.requests, server.pods = queue.Queue(), pods
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def drain_on_sigterm(server: Server) -> None:
    """SIGTERM: stop accepting, let the requests in flight finish, then tell every process to stop."""
    sigterm = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: sigterm.set())

    def drain() -> None:
        sigterm.wait()
        log("SIGTERM: draining")
        server.shutdown()
        server.server_close()
        stop = Request(np.zeros(MESSAGE_LEN, np.int32))
        stop.message[0] = STOP
        server.requests.put(stop)

    threading.Thread(target=drain, daemon=True).start()


def leader_loop(model: Model, server: Server) -> None:
    while True:
        try:
            request = server.requests.get(timeout=IDLE_TICK)
        except queue.Empty:
            multihost_utils.broadcast_one_to_all(np.zeros(MESSAGE_LEN, np.int32))  # NOOP: the group is whole
            continue
        multihost_utils.broadcast_one_to_all(request.message)
        if request.message[0] == STOP:
            return
        started = time.monotonic()
        try:
            token, ranks = run(model, request.message)
            request.result.update(
                next=bytes([token]).decode("latin-1"),
                token=token,
                ranks=ranks,
                pods=[server.pods[r] for r in ranks],
                seconds=round(time.monotonic() - started, 4),
            )
        except Exception as err:  # a lost process: answer, then leave (main exits 1)
            request.result["error"] = f"{type(err).__name__}: {err}"
            raise
        finally:
            request.done.set()


# --- every process ------------------------------------------------------------------------------------


def worker_loop(model: Model, terminating: threading.Event) -> None:
    def on_sigterm(*_: Any) -> None:
        log(f"SIGTERM: computing until the leader says STOP (at most {WORKER_DRAIN_TIMEOUT:.0f}s)")
        terminating.set()
        threading.Timer(WORKER_DRAIN_TIMEOUT, lambda: os._exit(0)).start()

    signal.signal(signal.SIGTERM, on_sigterm)
    while True:
        message = np.asarray(
            multihost_utils.broadcast_one_to_all(np.zeros(MESSAGE_LEN, np.int32), is_source=False)
        )
        if message[0] == STOP:
            return
        if message[0] == FORWARD:
            run(model, message)


def wait_for_sigterm(terminating: threading.Event) -> None:
    """A worker whose leader drained stays until its own pod is deleted (it goes with its leader's):
    exiting now would have the kubelet restart it, and a restart is a group failure to the
    LeaderWorkerSet, which would then recreate the group replacing this one."""
    log("the leader drained: waiting for SIGTERM")
    terminating.wait()


def main() -> None:
    log(f"joining the group at {LEADER_ADDRESS}:{COORDINATOR_PORT}")
    try:
        jax.distributed.initialize(
            coordinator_address=f"{LEADER_ADDRESS}:{COORDINATOR_PORT}",
            num_processes=SIZE,
            process_id=RANK,
            initialization_timeout=FORMATION_TIMEOUT,
            heartbeat_timeout_seconds=HEARTBEAT_TIMEOUT,
            cluster_detection_method="deactivate",  # the LWS variables say it all; no auto-detection
        )
    except Exception as err:
        log(f"the group did not form within {FORMATION_TIMEOUT}s: {err}")
        sys.exit(1)
    model = build_model()
    pods = pod_names()
    token, ranks = run(model, encode("warm-up"))  # compiles; every process takes part
    log(f"group formed: {pods}, warm-up forward pass on ranks {ranks} -> byte {token}")
    if RANK == 0:
        server = start_server(pods)
        drain_on_sigterm(server)
        log(f"serving on :{SERVE_PORT}")
        leader_loop(model, server)
        log("drained; every process told to stop")
        jax.distributed.shutdown()
    else:
        terminating = threading.Event()
        worker_loop(model, terminating)
        jax.distributed.shutdown()
        wait_for_sigterm(terminating)


if __name__ == "__main__":
    try:
        main()
    except BaseException as err:  # a lost process fails the collectives: the whole group must restart
        log(f"leaving: {type(err).__name__}: {err}")
        os._exit(1)  # at once: request threads still waiting must not hold the process
    os._exit(0)
