"""A tiny simulated cluster for rollout tests: the leader StatefulSet, its groups, and the StatefulSet
controller played by hand."""

from dataclasses import dataclass, field
from typing import Any

from tests.support.builders import leader_pod, leader_sts, worker_statefulset


@dataclass
class Group:
    """One simulated group: its leader's revision and readiness."""

    revision: str
    ready: bool = False


@dataclass
class World:
    """A tiny cluster for rollout simulations: the leader StatefulSet and its groups by ordinal."""

    lws_name: str
    size: int
    sts_replicas: int
    partition: int = 0
    replicas_annotation: int = 0
    update_revision: str = ""
    current_revision: str = ""
    groups: dict[int, Group] = field(default_factory=dict)

    def leader_pods(self) -> list[dict[str, Any]]:
        return [
            leader_pod(self.lws_name, i, g.revision, ready=g.ready) for i, g in sorted(self.groups.items())
        ]

    def statefulsets(self) -> list[dict[str, Any]]:
        if self.size == 1:
            return [leader_sts(self.lws_name, replicas=self.sts_replicas)]
        return [
            worker_statefulset(p, ready=g.ready)
            for p, g in zip(self.leader_pods(), self.groups.values(), strict=True)
        ]

    def sts_obj(self) -> dict[str, Any]:
        return leader_sts(
            self.lws_name,
            replicas=self.sts_replicas,
            partition=self.partition,
            replicas_annotation=str(self.replicas_annotation),
            status_replicas=len(self.groups),
        )

    def statefulset_controller(self) -> None:
        """Play the StatefulSet controller (Parallel, with a big enough maxUnavailable): drop ordinals
        above replicas, create missing ones, recreate outdated ones at or above the partition."""
        for ordinal in [o for o in self.groups if o >= self.sts_replicas]:
            del self.groups[ordinal]
        for ordinal in range(self.sts_replicas):
            wanted = self.update_revision if ordinal >= self.partition else self.current_revision
            group = self.groups.get(ordinal)
            if group is None or (ordinal >= self.partition and group.revision != self.update_revision):
                self.groups[ordinal] = Group(wanted, ready=False)
        if self.partition == 0 and all(g.revision == self.update_revision for g in self.groups.values()):
            self.current_revision = self.update_revision

    def mark_ready(self, *ordinals: int) -> None:
        for ordinal in ordinals:
            self.groups[ordinal].ready = True

    def row(self) -> str:
        """The doc's notation: ✅ updated+ready, ❎ not updated, ⏳ in update (new, not ready)."""
        cells = []
        for ordinal in range(max([*self.groups, -1]) + 1):
            group = self.groups.get(ordinal)
            if group is None:
                cells.append("  ")
            elif group.revision != self.update_revision:
                cells.append("❎")
            else:
                cells.append("✅" if group.ready else "⏳")
        return " ".join(cells).rstrip()
