"""Lease-based leader election (coordination.k8s.io/v1), with client-go's semantics.

* Expiry is judged with the local monotonic clock from the moment this replica last saw the lease
  record change, never from the timestamps inside it, so clock skew between replicas cannot make two
  leaders.
* The leader renews every `retry_period`; if no renewal succeeds for `renew_deadline`, leadership is
  lost and `run()` returns (the manager then stops its controllers and exits, as controller-runtime
  does).
* On graceful shutdown the leader releases the lease (empty holder, 1 s duration) so a standby can
  take over at once instead of waiting out the lease.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import structlog
from prometheus_client import Gauge

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.clock import Clock, RealClock
from leaderworkerset.runtime.errors import is_not_found
from leaderworkerset.runtime.events import micro_time
from leaderworkerset.runtime.resources import LEASES, ResourceRef

log = structlog.get_logger(__name__)

R = TypeVar("R")

DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0


class LeaseClient(Protocol):
    """The three calls the elector makes (KubeClient satisfies it)."""

    async def get(self, ref: ResourceRef, namespace: str | None, name: str) -> dict[str, Any]: ...

    async def create(self, ref: ResourceRef, obj: Any, namespace: str | None = None) -> dict[str, Any]: ...

    async def update(self, ref: ResourceRef, obj: Any, subresource: str | None = None) -> dict[str, Any]: ...


def default_identity() -> str:
    """hostname_uuid, as controller-runtime builds it."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class ElectionConfig:
    namespace: str
    name: str = c.DEFAULT_LEADER_ELECTION_ID
    identity: str = ""
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")


class LeaderElector:
    def __init__(
        self,
        client: LeaseClient,
        config: ElectionConfig,
        *,
        clock: Clock | None = None,
        wall_clock: Callable[[], datetime.datetime] | None = None,
        status_gauge: Gauge | None = None,
    ) -> None:
        self._client = client
        self.config = config
        self.identity = config.identity or default_identity()
        self._clock: Clock = clock or RealClock()
        self._wall = wall_clock or (lambda: datetime.datetime.now(datetime.UTC))
        self._gauge = status_gauge
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = float("-inf")
        self._lease: dict[str, Any] | None = None
        self.leading = asyncio.Event()
        self._set_leader(False)

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    @property
    def observed_holder(self) -> str | None:
        return (self._observed_spec or {}).get("holderIdentity")

    async def run(self) -> None:
        """Acquire, then renew until leadership is lost (returns) or the task is cancelled (releases)."""
        try:
            await self._acquire()
            log.info("became leader", lease=self.config.name, identity=self.identity)
            await self._renew_until_lost()
            log.error("leader election lost", lease=self.config.name, identity=self.identity)
        finally:
            was_leader = self.is_leader
            self._set_leader(False)
            if was_leader and self.config.release_on_cancel:
                await asyncio.shield(self._release())

    # ----- loops ----------------------------------------------------------------------------------
    async def _acquire(self) -> None:
        while not await self._try_acquire_or_renew():
            await self._clock.sleep(self.config.retry_period)
        self._set_leader(True)

    async def _renew_until_lost(self) -> None:
        while True:
            deadline = self._clock.now() + self.config.renew_deadline
            while not await self._bounded(self._try_acquire_or_renew(), deadline):
                if self._clock.now() >= deadline:
                    return
                await self._clock.sleep(self.config.retry_period)
            await self._clock.sleep(self.config.retry_period)

    async def _bounded(self, attempt: Awaitable[bool], deadline: float) -> bool:
        """The attempt's result, or False if the renew deadline passes first (a hung API call)."""
        work = asyncio.ensure_future(attempt)
        timer = asyncio.ensure_future(self._clock.sleep(max(deadline - self._clock.now(), 0.0)))
        try:
            done, _ = await asyncio.wait({work, timer}, return_when=asyncio.FIRST_COMPLETED)
            return work in done and work.result()
        finally:
            for task in (work, timer):
                task.cancel()

    # ----- one attempt ----------------------------------------------------------------------------
    async def _try_acquire_or_renew(self) -> bool:
        if self._renewable_from_memory() and await self._update(
            self._lease or {}, self._next_spec(self._observed_spec or {})
        ):
            return True
        try:
            lease = await self._client.get(LEASES, self.config.namespace, self.config.name)
        except Exception as exc:
            if not is_not_found(exc):
                log.warning("error retrieving lease", lease=self.config.name, error=str(exc))
                return False
            return await self._create()
        spec: dict[str, Any] = lease.get("spec") or {}
        if spec != self._observed_spec:
            self._observed_spec = spec
            self._observed_at = self._clock.now()
        holder = spec.get("holderIdentity")
        held_by_other = bool(holder) and holder != self.identity
        if held_by_other and self._observed_at + self.config.lease_duration > self._clock.now():
            return False
        return await self._update(lease, self._next_spec(spec))

    def _renewable_from_memory(self) -> bool:
        """client-go's fast path: a leader whose lease is still valid renews from the Lease it last
        wrote, one PUT and no GET (that halves the idle manager's requests). Someone else's
        write makes the PUT conflict, and the attempt falls back to reading the Lease."""
        valid = self._observed_at + self.config.lease_duration > self._clock.now()
        return self.is_leader and self._lease is not None and valid

    def _next_spec(self, old: dict[str, Any]) -> dict[str, Any]:
        now = micro_time(self._wall())
        renewing = old.get("holderIdentity") == self.identity and self.is_leader
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.config.lease_duration),
            "acquireTime": old.get("acquireTime", now) if renewing else now,
            "renewTime": now,
            "leaseTransitions": int(old.get("leaseTransitions") or 0) + (0 if renewing else 1),
        }

    async def _create(self) -> bool:
        now = micro_time(self._wall())
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.config.lease_duration),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.config.name, "namespace": self.config.namespace},
            "spec": spec,
        }
        try:
            created = await self._client.create(LEASES, body, namespace=self.config.namespace)
        except Exception as exc:
            log.info("could not create lease", lease=self.config.name, error=str(exc))
            return False
        self._remember(created)
        return True

    async def _update(self, lease: dict[str, Any], spec: dict[str, Any]) -> bool:
        # PUT with the resourceVersion we read: a concurrent writer makes this fail with 409.
        body = {**lease, "spec": spec}
        try:
            updated = await self._client.update(LEASES, body)
        except Exception as exc:
            log.info("could not update lease", lease=self.config.name, error=str(exc))
            return False
        self._remember(updated)
        return True

    def _remember(self, lease: dict[str, Any]) -> None:
        self._lease = lease
        self._observed_spec = lease.get("spec") or {}
        self._observed_at = self._clock.now()

    async def _release(self) -> None:
        if self._lease is None:
            return
        spec = dict(self._lease.get("spec") or {})
        now = micro_time(self._wall())
        spec.update(holderIdentity=None, leaseDurationSeconds=1, acquireTime=now, renewTime=now)
        try:
            await self._client.update(LEASES, {**self._lease, "spec": spec})
            log.info("released leader lease", lease=self.config.name)
        except Exception as exc:
            log.warning("could not release lease", lease=self.config.name, error=str(exc))

    def _set_leader(self, leading: bool) -> None:
        if leading:
            self.leading.set()
        else:
            self.leading.clear()
        if self._gauge is not None:
            self._gauge.labels(self.config.name).set(1 if leading else 0)
