"""The manager: one process, one event loop, everything controllers and webhooks need around them.

Start order (as controller-runtime): probe and metrics servers, the event writers and every runnable
that must run on all replicas (webhook servers), the caches; then leader election; once leading, wait
for cache sync and start the controllers. Losing leadership stops the controllers and makes `run()`
raise `LeadershipLostError` so the process exits and is restarted (upstream exits too). SIGTERM/SIGINT
trigger a graceful stop: controllers drain their in-flight reconciles (bounded by
`graceful_shutdown_timeout`), the lease is released, queued events are flushed.

    mgr = Manager(client, ManagerOptions(leader_elect=True, election_namespace="lws-system"))
    pods = mgr.cache.informer(PODS, POD_CODEC, label_selector=SET_NAME_LABEL)
    recorder = mgr.event_recorder("leaderworkerset")
    ctl = Controller("pod", reconcile, metrics=mgr.metrics)
    ctl.watch(pods, label_mapper(SET_NAME_LABEL))
    mgr.add_controller(ctl)
    mgr.add_runnable("webhooks", webhook_server.run)          # every replica
    mgr.add_readiness_check("webhook-certs", certs_ready)
    await mgr.run()
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import ssl
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector

from leaderworkerset.api import constants as c
from leaderworkerset.api.tls import TLSSettings
from leaderworkerset.runtime.cache import Cache
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock, RealClock
from leaderworkerset.runtime.controller import Controller
from leaderworkerset.runtime.events import ApiEventSink, EventRecorder
from leaderworkerset.runtime.leaderelection import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    ElectionConfig,
    LeaderElector,
)
from leaderworkerset.runtime.metrics import RuntimeMetrics, new_runtime_metrics
from leaderworkerset.runtime.metricsserver import KubeAuthorizer, metrics_app, server_ssl_context
from leaderworkerset.runtime.probes import Check, CheckSet, ping, probe_app

log = structlog.get_logger(__name__)

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

Runnable = Callable[[], Coroutine[Any, Any, None]]


class CacheSyncTimeoutError(RuntimeError):
    """The caches did not sync in time (e.g. a CRD is missing); the process should exit non-zero."""


class LeadershipLostError(RuntimeError):
    """Raised by `Manager.run` when the lease was lost; the process should exit non-zero."""


@dataclass(frozen=True)
class ManagerOptions:
    health_probe_bind_address: str = c.DEFAULT_HEALTH_PROBE_BIND_ADDRESS  # "0" disables
    liveness_endpoint: str = c.DEFAULT_LIVENESS_ENDPOINT
    readiness_endpoint: str = c.DEFAULT_READINESS_ENDPOINT
    metrics_bind_address: str = c.DEFAULT_METRICS_BIND_ADDRESS  # "0" disables
    metrics_secure: bool = True
    metrics_cert_dir: str | None = None
    tls_min_version: ssl.TLSVersion | None = None
    tls: TLSSettings | None = None  # the Configuration's tls block (min version and cipher suites)
    leader_elect: bool = True
    election_namespace: str = c.DEFAULT_NAMESPACE
    election_id: str = c.DEFAULT_LEADER_ELECTION_ID
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    graceful_shutdown_timeout: float = 30.0
    cache_sync_timeout: float = 120.0
    # After the initial sync, move the cache into the GC's permanent generation: it is long-lived and
    # acyclic, and otherwise every full collection walks all of it (see benchmarks/runtime_decode.py).
    freeze_gc_after_sync: bool = True
    handle_signals: bool = True


def split_address(address: str) -> tuple[str, int] | None:
    """Go-style bind address (":8081", "0.0.0.0:8081", "0") → (host, port), None when disabled."""
    if address in ("", "0"):
        return None
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)


@dataclass
class _Runnable:
    name: str
    run: Runnable
    leader_only: bool


@dataclass
class Manager:
    client: KubeClient
    options: ManagerOptions = field(default_factory=ManagerOptions)
    registry: CollectorRegistry | None = None
    clock: Clock = field(default_factory=RealClock)

    def __post_init__(self) -> None:
        if self.registry is None:
            self.registry = CollectorRegistry()
            for collector in (ProcessCollector, PlatformCollector, GCCollector):
                collector(registry=self.registry)
        self.metrics: RuntimeMetrics = new_runtime_metrics(self.registry)
        self.client.instrument(self.metrics.rest_client_requests)
        self.cache = Cache(self.client, clock=self.clock)
        self.liveness = CheckSet({"ping": ping})
        self.readiness = CheckSet({"ping": ping})
        self.controllers: list[Controller] = []
        self.recorders: dict[str, EventRecorder] = {}
        self.elector: LeaderElector | None = None
        self._runnables: list[_Runnable] = []
        self._controller_gates: list[Callable[[], Awaitable[object]]] = []
        self._stop = asyncio.Event()
        self._sites: list[web.AppRunner] = []
        self.bound_ports: dict[str, int] = {}
        self.servers_started = asyncio.Event()  # set once probe and metrics servers listen

    # ----- setup --------------------------------------------------------------------------------
    def add_controller(self, controller: Controller) -> None:
        self.controllers.append(controller)

    def add_runnable(self, name: str, run: Runnable, *, leader_only: bool = False) -> None:
        self._runnables.append(_Runnable(name, run, leader_only))

    def add_controller_gate(self, gate: Callable[[], Awaitable[object]]) -> None:
        """Controllers start only after every gate has returned (e.g. webhook certificates are in
        place: upstream starts its controllers only then, so no pod is created while the pod webhook
        cannot yet answer)."""
        self._controller_gates.append(gate)

    def add_readiness_check(self, name: str, check: Check) -> None:
        self.readiness.add(name, check)

    def add_health_check(self, name: str, check: Check) -> None:
        self.liveness.add(name, check)

    def event_recorder(self, reporting_controller: str) -> EventRecorder:
        if reporting_controller not in self.recorders:
            sink = ApiEventSink(self.client)
            self.recorders[reporting_controller] = EventRecorder(sink, reporting_controller, clock=self.clock)
        return self.recorders[reporting_controller]

    def stop(self) -> None:
        """Ask for a graceful stop (what SIGTERM does)."""
        self._stop.set()

    # ----- run ----------------------------------------------------------------------------------
    async def run(self) -> None:
        self._install_signal_handlers()
        try:
            await self._start_servers()
            self.servers_started.set()
            await self._run_tasks()
        finally:
            self._remove_signal_handlers()
            await self._flush_events()
            await self._stop_servers()
            log.info("manager stopped")

    async def _run_tasks(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                background = [group.create_task(self.cache.run(), name="cache")]
                background += [
                    group.create_task(r.run(), name=f"recorder:{n}") for n, r in self.recorders.items()
                ]
                background += [
                    group.create_task(r.run(), name=r.name) for r in self._runnables if not r.leader_only
                ]
                lost = await self._lead_until_stopped(group)
                for task in background:
                    task.cancel()
        except BaseExceptionGroup as group_error:
            # One failing part (a runnable, the cache sync) is the usual case: surface it unwrapped.
            if len(group_error.exceptions) == 1:
                raise group_error.exceptions[0] from None
            raise
        if lost:
            raise LeadershipLostError(f"leader election lost: {self.options.election_id}")

    async def _lead_until_stopped(self, group: asyncio.TaskGroup) -> bool:
        """Run leader-only work while leading; returns True if leadership was lost."""
        elector_task: asyncio.Task[None] | None = None
        if self.options.leader_elect:
            self.elector = self._new_elector()
            elector_task = group.create_task(self.elector.run(), name="leader-election")
            if not await self._first(self.elector.leading.wait(), elector_task):
                return await self._finish_election(elector_task)
        if not await self._first(self._wait_for_sync(), elector_task):
            return await self._finish_election(elector_task)
        gates = asyncio.gather(*(gate() for gate in self._controller_gates))
        if not await self._first(gates, elector_task):
            return await self._finish_election(elector_task)
        log.info("caches synced, starting controllers", controllers=[c.name for c in self.controllers])
        if self.options.freeze_gc_after_sync:
            gc.collect()
            gc.freeze()
        leader_tasks = [
            group.create_task(ctl.run(), name=f"controller:{ctl.name}") for ctl in self.controllers
        ]
        leader_tasks += [group.create_task(r.run(), name=r.name) for r in self._runnables if r.leader_only]
        await self._first(asyncio.sleep(float("inf")), elector_task)
        await self._stop_controllers(leader_tasks)
        return await self._finish_election(elector_task)

    async def _wait_for_sync(self) -> None:
        """Caches synced, or CacheSyncTimeoutError after `cache_sync_timeout` (controller-runtime's 2 min)."""
        sync = asyncio.ensure_future(self.cache.wait_for_sync())
        timer = asyncio.ensure_future(self.clock.sleep(self.options.cache_sync_timeout))
        try:
            await asyncio.wait({sync, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
        if not sync.done():
            sync.cancel()
            pending = [name for name, inf in self.cache.informers.items() if not inf.has_synced()]
            raise CacheSyncTimeoutError(f"timed out waiting for caches to sync: {', '.join(pending)}")

    async def _first(self, awaitable: Awaitable[object], elector_task: asyncio.Task[None] | None) -> bool:
        """Wait for `awaitable`; False if a stop was requested or the election ended first."""
        waiting = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self._stop.wait())
        watched: set[asyncio.Future[object]] = {waiting, stop}  # type: ignore[arg-type]
        if elector_task is not None:
            watched.add(elector_task)  # type: ignore[arg-type]
        try:
            done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            if waiting in done:
                waiting.result()  # re-raise its failure (e.g. CacheSyncTimeoutError)
                return True
            return False
        finally:
            waiting.cancel()
            stop.cancel()

    async def _finish_election(self, elector_task: asyncio.Task[None] | None) -> bool:
        """True when the elector ended by itself (lost); otherwise cancel it, which releases the lease."""
        if elector_task is None:
            return False
        if elector_task.done():
            return not self._stop.is_set()
        elector_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await elector_task
        return False

    async def _stop_controllers(self, tasks: list[asyncio.Task[None]]) -> None:
        """Drain in-flight reconciles, then cancel whatever is still running after the timeout."""
        drains = [asyncio.ensure_future(ctl.stop()) for ctl in self.controllers]
        if drains:
            _, pending = await asyncio.wait(drains, timeout=self.options.graceful_shutdown_timeout)
            if pending:
                log.warning("graceful shutdown timed out, cancelling reconciles", pending=len(pending))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, *drains, return_exceptions=True)

    def _new_elector(self) -> LeaderElector:
        config = ElectionConfig(
            namespace=self.options.election_namespace,
            name=self.options.election_id,
            lease_duration=self.options.lease_duration,
            renew_deadline=self.options.renew_deadline,
            retry_period=self.options.retry_period,
        )
        return LeaderElector(
            self.client, config, clock=self.clock, status_gauge=self.metrics.leader_election_master_status
        )

    async def _flush_events(self) -> None:
        for recorder in self.recorders.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(recorder.flush(), timeout=5.0)
                await asyncio.wait_for(recorder.refresh_series(), timeout=5.0)

    # ----- servers and signals ------------------------------------------------------------------
    async def _start_servers(self) -> None:
        opts = self.options
        probes = split_address(opts.health_probe_bind_address)
        if probes is not None:
            app = probe_app(self.liveness, self.readiness, opts.liveness_endpoint, opts.readiness_endpoint)
            await self._serve("probes", app, probes, None)
        metrics_addr = split_address(opts.metrics_bind_address)
        if metrics_addr is not None:
            assert self.registry is not None
            authorizer = (
                KubeAuthorizer(lambda ref, body: self.client.create(ref, body))
                if opts.metrics_secure
                else None
            )
            context = (
                # Off the loop: a self-signed pair comes from a child process (runtime/childjob.py).
                await asyncio.to_thread(
                    server_ssl_context, opts.metrics_cert_dir, min_version=opts.tls_min_version, tls=opts.tls
                )
                if opts.metrics_secure
                else None
            )
            await self._serve("metrics", metrics_app(self.registry, authorizer), metrics_addr, context)

    async def _serve(
        self, name: str, app: web.Application, address: tuple[str, int], context: ssl.SSLContext | None
    ) -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, address[0], address[1], ssl_context=context)
        await site.start()
        self._sites.append(runner)
        sockets = runner.addresses
        self.bound_ports[name] = int(sockets[0][1]) if sockets else address[1]
        log.info(
            "serving", server=name, address=f"{address[0]}:{self.bound_ports[name]}", tls=context is not None
        )

    async def _stop_servers(self) -> None:
        for runner in self._sites:
            await runner.cleanup()
        self._sites.clear()

    def _install_signal_handlers(self) -> None:
        if not self.options.handle_signals:
            return
        loop = asyncio.get_running_loop()
        for sig in _STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: signal.Signals) -> None:
        log.info("received signal, shutting down gracefully", signal=sig.name)
        self.stop()

    def _remove_signal_handlers(self) -> None:
        if not self.options.handle_signals:
            return
        loop = asyncio.get_running_loop()
        for sig in _STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
