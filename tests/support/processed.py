"""Positive signs that the in-process controllers have processed an object, for negative checks.

A negative check ("no worker StatefulSet appears") holds trivially before the controller has looked
at the object, so it first waits here until the controller has caught up with the object's latest
version: the live object's resourceVersion has reached the controller's cache (whose handlers queue
the key synchronously) and the key is neither queued nor being reconciled. A failing reconcile that
waits for its rate-limited retry counts as processed: it ran on the latest version.
"""

from __future__ import annotations

from leaderworkerset.controllers.setup import RegisteredControllers
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import CONTROLLER_REVISIONS, LEADERWORKERSETS, PODS, STATEFULSETS
from tests.support.wait import eventually

# The in-process controllers (tests/integration/controllers/conftest.py's `lws_controllers` registers them).
RUNNING: list[RegisteredControllers] = []
# (verb, resource, namespace, name) of every apply, create and patch those controllers sent (conftest).
WRITES: list[tuple[str, str, str, str]] = []


def applies(resource: str, ns: str, name: str) -> int:
    """How many server-side applies of this object the in-process controllers have sent."""
    return WRITES.count(("apply", resource, ns, name))


def creates(resource: str, ns: str, name: str) -> int:
    """How many creates of this object (answered or refused) the in-process controllers have sent."""
    return WRITES.count(("create", resource, ns, name))


def patches(resource: str, ns: str, name: str) -> int:
    """How many patches of this object (not of a subresource) the in-process controllers have sent."""
    return WRITES.count(("patch", resource, ns, name))


def _controllers() -> RegisteredControllers:
    if not RUNNING:
        raise AssertionError("no in-process controllers: a negative check needs the `ns` fixture")
    return RUNNING[-1]


async def expect_pods_processed(api: KubeClient, ns: str, names: list[str]) -> None:
    """Wait until the pod controller has reconciled the current version of every pod in `names`."""
    controllers = _controllers()
    want = {name: int((await api.get(PODS, ns, name))["metadata"]["resourceVersion"]) for name in names}

    def caught_up() -> bool:
        for name, version in want.items():
            cached = controllers.informers.pod(ns, name)
            assert cached is not None, f"pod {ns}/{name} not in the controller's cache yet"
            cached_version = int(cached["metadata"]["resourceVersion"])
            assert cached_version >= version, f"pod {name} cached at {cached_version}, live {version}"
            assert ObjectKey(ns, name) not in controllers.pod.queue, f"pod {name} still queued"
        return True

    await eventually(caught_up, interval=0.02)


async def expect_lws_processed(api: KubeClient, ns: str, name: str) -> None:
    """Wait until the LWS controller has reconciled the current version of the LeaderWorkerSet."""
    controllers = _controllers()
    assert controllers.informers is not None
    assert controllers.leaderworkerset is not None
    informers, lws_controller = controllers.informers, controllers.leaderworkerset
    version = int((await api.get(LEADERWORKERSETS, ns, name))["metadata"]["resourceVersion"])

    def caught_up() -> bool:
        cached = informers.lws.store.get(ObjectKey(ns, name))
        assert cached is not None, f"LeaderWorkerSet {ns}/{name} not in the controller's cache yet"
        cached_version = int(cached["metadata"]["resourceVersion"])
        assert cached_version >= version, f"{name} cached at {cached_version}, live {version}"
        assert ObjectKey(ns, name) not in lws_controller.queue, f"{name} still queued"
        return True

    await eventually(caught_up, interval=0.02)


async def expect_statefulset_cached(api: KubeClient, ns: str, name: str) -> None:
    """Wait until the controllers' StatefulSet cache holds the live version of `name` (its handlers
    have queued what that version wakes)."""
    controllers = _controllers()
    assert controllers.informers is not None
    informers = controllers.informers
    version = int((await api.get(STATEFULSETS, ns, name))["metadata"]["resourceVersion"])

    def cached() -> bool:
        sts = informers.statefulsets.store.get(ObjectKey(ns, name))
        assert sts is not None, f"StatefulSet {ns}/{name} not in the controller's cache yet"
        cached_version = int(sts.metadata.resourceVersion or 0)
        assert cached_version >= version, f"{name} cached at {cached_version}, live {version}"
        return True

    await eventually(cached, interval=0.02)


async def expect_revision_cached(api: KubeClient, ns: str, name: str) -> None:
    """Wait until the controllers' ControllerRevision cache holds the live version of `name`."""
    informers = _controllers().informers
    assert informers is not None
    version = int((await api.get(CONTROLLER_REVISIONS, ns, name))["metadata"]["resourceVersion"])

    def cached() -> bool:
        revision = informers.revisions.store.get(ObjectKey(ns, name))
        assert revision is not None, f"ControllerRevision {ns}/{name} not in the controller's cache yet"
        assert int(revision["metadata"]["resourceVersion"]) >= version, f"{name} cached at an older version"
        return True

    await eventually(cached, interval=0.02)


def revision_cached(ns: str, name: str) -> bool:
    informers = _controllers().informers
    assert informers is not None
    return ObjectKey(ns, name) in informers.revisions.store
