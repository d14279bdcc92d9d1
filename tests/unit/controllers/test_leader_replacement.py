"""`LeaderReplacement`: the I/O of maxUnavailable emulation (deletions with a UID precondition, the
MaxUnavailableEmulated event once per update revision, nothing where the StatefulSet keeps the
field), on fake caches, client and recorder."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.controllers.leaderworkerset.replacement import LeaderReplacement
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.errors import ApiStatus, ApiStatusError
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.objects import ObjectKey
from tests.support.builders import NS, cached_lws, leader_pod, leader_sts

Obj = dict[str, Any]
NAME = "test-sample"


@dataclass
class Fakes:
    pods: list[Obj]
    deletes: list[tuple[str, str | None]] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)

    def set_leader_pods(self, _namespace: str, _name: str) -> list[Obj]:
        return self.pods

    async def delete(self, _ref: object, _namespace: str, name: str, *, uid: str | None = None) -> Obj:
        if name in self.missing:
            raise ApiStatusError(ApiStatus(code=404, reason="NotFound", message="gone"))
        self.deletes.append((name, uid))
        return {}

    def record(self, _ref: object, type_: str, reason: str, _action: str, note: str, *_rest: object) -> None:
        self.events.append((type_, reason, note))


def _replacement(fakes: Fakes) -> LeaderReplacement:
    return LeaderReplacement(
        cast(KubeClient, fakes), cast(SharedInformers, fakes), cast(EventRecorder, fakes), FakeClock()
    )


def _round() -> Round:
    lws = cached_lws(NAME).replicas(6).max_unavailable(3).obj()
    return Round.of(lws, ObjectKey(NS, NAME))


def _pods(revision: str = "old") -> list[Obj]:
    return [leader_pod(NAME, i, "r", sts_revision=revision) for i in range(6)]


async def test_deletes_within_budget_and_announces_once_per_revision() -> None:
    fakes = Fakes(_pods())
    replacement = _replacement(fakes)
    sts = leader_sts(NAME, replicas=6, update_revision="new")
    await replacement.step(_round(), sts)
    assert fakes.deletes == [(f"{NAME}-{i}", f"uid-{NAME}-{i}") for i in (5, 4, 3)]
    assert [(t, r) for t, r, _ in fakes.events] == [(c.EVENT_TYPE_NORMAL, c.EVENT_MAX_UNAVAILABLE_EMULATED)]
    assert fakes.events[0][2] == c.MSG_MAX_UNAVAILABLE_EMULATED % (NAME, 3, "new")
    # The cache does not show the deletions yet: the pods this process deleted count as
    # terminating, so the next round deletes nothing more and says nothing again.
    await replacement.step(_round(), sts)
    assert len(fakes.deletes) == 3
    assert len(fakes.events) == 1


async def test_gone_pods_are_skipped() -> None:
    fakes = Fakes(_pods(), missing={f"{NAME}-5"})
    await _replacement(fakes).step(_round(), leader_sts(NAME, replicas=6, update_revision="new"))
    assert [name for name, _ in fakes.deletes] == [f"{NAME}-4", f"{NAME}-3"]


async def test_nothing_where_the_statefulset_keeps_max_unavailable() -> None:
    """Kubernetes 1.37 with the gate on: the StatefulSet controller replaces the groups itself."""
    fakes = Fakes(_pods())
    sts = leader_sts(NAME, replicas=6, update_revision="new", max_unavailable=3)
    await _replacement(fakes).step(_round(), sts)
    assert fakes.deletes == []
    assert fakes.events == []
