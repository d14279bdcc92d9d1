"""Hash identity: the leaders are a Deployment `<lws>`, applied like the leader StatefulSet."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.events import record
from leaderworkerset.controllers.leaderworkerset.rollout import record_apply_failure
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.controllers.memos import AppliedIntents, WriteMemo
from leaderworkerset.core.disruptionbudget.drainsurge import drain_surged
from leaderworkerset.core.hashidentity import leader_deployment
from leaderworkerset.core.objects import ControllerEvent, MutableObj, name_of
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import DEPLOYMENTS


@dataclass(eq=False)
class LeaderDeployments(Shell):
    _: KW_ONLY
    intents: AppliedIntents  # shared with the leader StatefulSets (`rollout.py`): keyed by the LWS
    memo: WriteMemo = field(default_factory=WriteMemo)

    def leader(self, key: ObjectKey) -> MutableObj | None:
        cached = self.informers.deployment(key.namespace, key.name)
        return self.memo.freshest(key, cached, self.informers.deployments.store.resource_version)

    async def apply(self, round_: Round, existing: MutableObj | None) -> MutableObj:
        """Server-side apply the leader Deployment (skipped when it would change nothing)."""
        surge = drain_surged(round_.lws, round_.leader_pods(self.informers))
        body = leader_deployment(round_.lws, revision_key=round_.revision_key, drain_surge=surge)
        if existing is not None and self.intents.unchanged(round_.key, body, existing):
            return existing
        try:
            applied = await self.client.apply(DEPLOYMENTS, body)
        except Exception as err:
            record_apply_failure(
                self.recorder,
                round_,
                err,
                c.MSG_FAILED_CREATE_LEADER_DEPLOYMENT,
                c.MSG_FAILED_UPDATE_LEADER_DEPLOYMENT,
            )
            raise
        self.memo.remember(round_.key, applied)
        self.intents.remember(round_.key, body, applied)
        if existing is None:
            record(
                self.recorder,
                round_.lws,
                ControllerEvent(
                    c.EVENT_TYPE_NORMAL,
                    c.EVENT_GROUPS_PROGRESSING,
                    c.EVENT_ACTION_CREATE,
                    c.MSG_CREATED_LEADER_DEPLOYMENT % round_.key.name,
                    None if round_.revision is None else ("ControllerRevision", name_of(round_.revision)),
                ),
            )
        return applied
