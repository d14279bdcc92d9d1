"""Capacity-aware surge of a DisaggregatedSet: gather the decision's inputs, keep its state.

The decision is `core.rollout.surgefallback.decision.decide_surge` over
`core.rollout.surgefallback.disaggregated.ds_signals`.
A DS without the annotation (and without our `surge-fallback-since`) costs nothing here. The DS
controller watches no pods (its caches are its own, so it runs without the LWS controller): the
target children's pods are LISTed by label while the rollout waits on them, and nodes and bound pods
while the surge is given back and the decision asks whether it may surge again. The state annotation
is written on the DS before the children are scaled, so a restarted manager carries on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.surgefallback import nodes_and_holding_pods
from leaderworkerset.core.disaggregated.rollout_inputs import child_views, role_targets
from leaderworkerset.core.objects import MutableObj, Obj, labels_of, namespace_of
from leaderworkerset.core.rollout.surgefallback import decision as sf
from leaderworkerset.core.rollout.surgefallback import disaggregated
from leaderworkerset.core.scheduling import accelerators
from leaderworkerset.core.scheduling.surgefallback import surge_capacity
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, PODS


class DsSurgeFallback:
    def __init__(self, client: KubeClient, clock: Clock) -> None:
        self._client = client
        self._clock = clock

    async def decide(
        self, ds: Obj, revision: str, targets: Mapping[str, int], children: Sequence[Obj]
    ) -> sf.SurgeMode:
        """This round's surge mode (SURGE for a DS that never opted in)."""
        if sf.fallback_seconds(ds) is None and sf.fallback_since(ds) is None:
            return sf.SURGE
        views = child_views(children)
        pods_by_child: dict[str, list[Obj]] = {}
        if disaggregated.ds_reads_pods(ds, views, revision):
            names = ",".join(view.name for view in disaggregated.waiting_children(views, revision))
            selector = f"{c.LABEL_SET_NAME} in ({names})"
            for pod in await self._client.list(PODS, namespace_of(ds), selector):
                pods_by_child.setdefault(labels_of(pod).get(c.LABEL_SET_NAME, ""), []).append(pod)
        roles = role_targets(ds, targets)
        signals = disaggregated.ds_signals(
            ds, revision=revision, roles=roles, children=views, pods_by_child=pods_by_child
        )
        now = self._clock.wall()
        if sf.wants_capacity(signals, now):
            signals = replace(signals, capacity=await self._capacity(ds))
        return sf.decide_surge(signals, now)

    async def _capacity(self, ds: Obj) -> sf.SurgeCapacity | None:
        """Whether one group of every role fits on the nodes its templates select (each role on
        its own: an approximation when roles share nodes); None when unknown."""
        read = await nodes_and_holding_pods(self._client)
        if read is None:
            return None
        nodes, bound = read
        fits, needs = True, dict[str, int]()
        for role in (ds.get("spec") or {}).get("roles") or []:
            lws = disaggregated.role_as_lws(role)
            selector = accelerators.template_node_selector(lws)
            capacity = surge_capacity(lws, accelerators.free_accelerators_by_node(nodes, bound, selector))
            if capacity is None:
                continue  # a role without accelerators does not say whether capacity came back
            fits = fits and capacity.fits
            for name, count in capacity.needs.items():
                needs[name] = needs.get(name, 0) + count
        if not needs:
            return None
        return sf.SurgeCapacity(fits, needs, accelerators.free_accelerators(nodes, bound, {}))

    async def remember(self, ds: MutableObj, mode: sf.SurgeMode) -> MutableObj:
        """Store (or remove) `surge-fallback-since` as `mode` has it, before any child is scaled;
        the DS as written (a conflict raises: the round is retried from the newer DS)."""
        annotations = sf.annotations_with_since(ds, mode)
        if annotations is None:
            return ds
        meta = {**(ds.get("metadata") or {}), "annotations": annotations}
        written: MutableObj = await self._client.update(DISAGGREGATEDSETS, {**ds, "metadata": meta})
        return {**ds, "metadata": written.get("metadata") or meta}
