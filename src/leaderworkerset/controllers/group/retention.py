"""Exhausted groups (restart budget): a group whose budget is spent is
marked and held by cleanup finalizers on every pod, its leader deleted, until `recover=true` on the
leader, a scale-down or rollout teardown, or the LWS going away releases it."""

from __future__ import annotations

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.group.leaders import LeaderDeletions
from leaderworkerset.controllers.group.reads import group_pods_of
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.controllers.restartbudget import mutate_restart_counts, patch_pod
from leaderworkerset.core.groups.state import is_leader_pod
from leaderworkerset.core.lifecycle import restartbudget
from leaderworkerset.core.lifecycle.restart import owner_statefulset_name, worker_belongs_to_leader
from leaderworkerset.core.objects import (
    MutableObj,
    is_deleting,
    is_hash,
    labels_of,
    lws_replicas,
    name_of,
    namespace_of,
    revision_key_of,
    uid_of,
)
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS


class Retention:
    def __init__(self, client: KubeClient, informers: SharedInformers, leaders: LeaderDeletions) -> None:
        self._client = client
        self._informers = informers
        self._leaders = leaders

    async def exhausted_leader(self, leader: MutableObj, lws: MutableObj) -> None:
        teardown = await self._teardown_requested(leader, lws)
        step = restartbudget.exhausted_leader_step(leader, teardown=teardown)
        if step is restartbudget.ExhaustedStep.RECOVER:
            await self._clear_count(leader, lws)
        if step in (restartbudget.ExhaustedStep.RELEASE, restartbudget.ExhaustedStep.RECOVER):
            await self.release(leader)
        elif step is restartbudget.ExhaustedStep.TERMINATE:
            await self.terminate(lws, leader)

    async def _teardown_requested(self, leader: MutableObj, lws: MutableObj) -> bool:
        """Scale-down or rollout wants the retained group gone."""
        namespace = namespace_of(leader)
        if not is_hash(lws):
            return restartbudget.ordinal_teardown_requested(
                leader, self._informers.statefulset(namespace, name_of(lws))
            )
        deploy = self._informers.deployment(namespace, name_of(lws))
        leaders = self._informers.set_leader_pods(namespace, name_of(lws))
        teardown = restartbudget.hash_teardown_requested(
            leader,
            desired_revision=revision_key_of(deploy) if deploy is not None else "",
            replicas=lws_replicas(lws),
            leader_pods=leaders,
        )
        if teardown.clear_count:
            await self._clear_count(leader, lws)
        return teardown.release

    async def _clear_count(self, leader: MutableObj, lws: MutableObj) -> None:
        """Forget the group's restart count (of the leader's revision): it starts afresh."""
        key = restartbudget.restart_count_key(leader)
        await mutate_restart_counts(
            self._client,
            namespace_of(leader),
            name_of(lws),
            lambda counts: restartbudget.clear_count(counts, key),
        )

    async def terminate(self, lws: MutableObj, leader: MutableObj) -> None:
        """Mark and hold the group (leader first, then its members), then delete the leader."""
        leader = await patch_pod(self._client, leader, restartbudget.exhaust_leader_patch) or leader
        for member in self._group_members(leader):
            if is_leader_pod(member) or self._belongs_to(member, leader):
                await patch_pod(self._client, member, restartbudget.hold_pod_patch)
        if is_deleting(leader):
            return
        await self._leaders.delete(
            lws,
            namespace_of(leader),
            name_of(leader),
            uid_of(leader),
            restartbudget.budget_exceeded_event(leader),
        )

    async def release_on_teardown(self, pod: MutableObj) -> None:
        """The cache says the LWS is gone or going: confirm with a fresh read before letting a
        retained group go (a lagging LWS cache must not end a retention)."""
        targets = self._release_targets(pod)
        if not any(restartbudget.holds_budget_finalizer(t) for t in targets):
            return
        lws = await self._client.get_or_none(
            LEADERWORKERSETS, namespace_of(pod), labels_of(pod)[c.LABEL_SET_NAME]
        )
        if lws is None or is_deleting(lws):
            await self.release(pod)

    def _release_targets(self, pod: MutableObj) -> list[MutableObj]:
        """A leader's whole group (workers first, then the leader), or a worker alone."""
        if not is_leader_pod(pod):
            return [pod]
        targets = self._group_members(pod)
        if all(name_of(t) != name_of(pod) for t in targets):
            targets.append(pod)
        return targets

    async def release(self, pod: MutableObj) -> None:
        """Remove the cleanup finalizer: a leader releases its whole group, workers first."""
        for target in self._release_targets(pod):
            if restartbudget.holds_budget_finalizer(target):
                await patch_pod(self._client, target, restartbudget.release_pod_patch)

    def _group_members(self, leader: MutableObj) -> list[MutableObj]:
        return [dict(p) for p in restartbudget.group_members(leader, group_pods_of(self._informers, leader))]

    def _belongs_to(self, worker: MutableObj, leader: MutableObj) -> bool:
        sts_name = owner_statefulset_name(worker)
        owner_sts = self._informers.statefulset(namespace_of(worker), sts_name) if sts_name else None
        return worker_belongs_to_leader(worker, leader, owner_sts)
