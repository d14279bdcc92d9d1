"""Capacity-aware surge of an Ordinal LWS: gather the decision's inputs, keep its one piece of state.

The decision is `core.rollout.surgefallback.decision.decide_surge`. A set without the annotation (and
without the controller's `surge-fallback-since`) costs nothing here: no pod is read, no LIST made.
The surge groups' pods come from the pod cache; the nodes' free capacity is a direct LIST of nodes
and bound pods, made only while the surge is given back and the decision wants to know whether it
may surge again (at most once per poll period per set). `surge-fallback-since` is written on the
LWS before the leader StatefulSet is changed, so a manager killed in between resumes in the same
mode.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, replace

from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.controllers.memos import WriteMemo
from leaderworkerset.controllers.surgefallback import nodes_and_holding_pods
from leaderworkerset.core.groups.state import group_states
from leaderworkerset.core.objects import MutableObj, Obj, lws_size
from leaderworkerset.core.rollout.partition import LeaderStatefulSetView, rollout_budget
from leaderworkerset.core.rollout.surgefallback import decision as sf
from leaderworkerset.core.scheduling import accelerators
from leaderworkerset.core.scheduling.surgefallback import surge_capacity
from leaderworkerset.runtime.resources import LEADERWORKERSETS


@dataclass(eq=False)
class SurgeFallback(Shell):
    _: KW_ONLY
    # The LWS memo of the status writer: our annotation write is read back like a status write.
    memo: WriteMemo

    async def decide(self, round_: Round) -> sf.SurgeMode:
        """The surge mode of this round (after the rollout's inputs were gathered)."""
        lws, sts = round_.lws, round_.leader_sts
        seconds, since = sf.fallback_seconds(lws), sf.fallback_since(lws)
        if (seconds is None and since is None) or sts is None:
            return sf.SURGE
        view = LeaderStatefulSetView.of(sts)
        budget = rollout_budget(lws)
        key = round_.key
        surge_pods = [
            pod
            for ordinal in range(budget.replicas, view.replicas)
            for pod in self.informers.group_pods(key.namespace, key.name, str(ordinal))
        ]
        inputs = sf.SurgeInputs(
            seconds=seconds,
            since=since,
            budget=budget,
            sts=view,
            under_way=round_.under_way,
            states=group_states(
                lws_name=key.name,
                sts_replicas=view.replicas,
                size=lws_size(lws),
                revision_key=round_.revision_key,
                leader_pods=round_.leader_pods(self.informers),
                statefulsets=round_.statefulsets(self.informers),
            ),
            unschedulable=sf.unschedulable_groups(surge_pods, budget.replicas),
        )
        now = self.clock.wall()
        if sf.wants_capacity(inputs, now):
            inputs = replace(inputs, capacity=await self._capacity(lws))
        return sf.decide_surge(inputs, now)

    async def _capacity(self, lws: Obj) -> sf.SurgeCapacity | None:
        """Whether a surge group fits on the nodes its templates select; None when unknown (the
        LIST failed, or the group requests no accelerators: it stays without surge)."""
        if not any(accelerators.group_accelerators(lws).values()):
            return None
        read = await nodes_and_holding_pods(self.client)
        if read is None:
            return None
        nodes, bound = read
        selector = accelerators.template_node_selector(lws)
        return surge_capacity(lws, accelerators.free_accelerators_by_node(nodes, bound, selector))

    async def remember(self, round_: Round, mode: sf.SurgeMode) -> None:
        """Store (or remove) `surge-fallback-since` as `mode` has it, before the StatefulSet moves.
        A conflict raises: the round is retried from the newer LWS."""
        annotations = sf.annotations_with_since(round_.lws, mode)
        if annotations is None:
            return
        meta = {**(round_.stored.get("metadata") or {}), "annotations": annotations}
        written: MutableObj = await self.client.update(LEADERWORKERSETS, {**round_.stored, "metadata": meta})
        self.memo.remember(round_.key, written)
        # The round's status write is guarded by the newest resourceVersion, now this one.
        round_.stored = written
        round_.lws = {**round_.lws, "metadata": written.get("metadata") or {}}
