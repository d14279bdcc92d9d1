"""What the pod controller reports about a group without changing it: opt-in GroupNotReady events
(core/observe/notready.py), each group incarnation's time to ready, and the recreation counter
(controllers/group/metrics.py)."""

from __future__ import annotations

from collections import OrderedDict

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.events import record
from leaderworkerset.controllers.group.metrics import GroupMetrics
from leaderworkerset.controllers.group.reads import lws_of
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.core.groups.naming import leader_name_for_worker
from leaderworkerset.core.groups.state import is_leader_pod, pod_ready
from leaderworkerset.core.objects import (
    MutableObj,
    is_deleting,
    labels_of,
    lws_size,
    name_of,
    namespace_of,
    uid_of,
)
from leaderworkerset.core.observe.diagnosis import Diagnosis, diagnose_group
from leaderworkerset.core.observe.notready import members_to_diagnose, next_report, wants_not_ready_events
from leaderworkerset.core.observe.readiness import group_milestones, ready_before
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.objects import ObjectKey

log = structlog.get_logger(__name__)

# Leader incarnations whose time to ready was observed (once each).
_OBSERVED_MEMORY = 10_000


class GroupObserver:
    def __init__(
        self, informers: SharedInformers, recorder: EventRecorder, clock: Clock, metrics: GroupMetrics
    ) -> None:
        self._informers = informers
        self._recorder = recorder
        self._metrics = metrics
        # Groups that were ready before this process started were observed by its predecessor.
        self._started = clock.wall().timestamp()
        self._observed: OrderedDict[str, None] = OrderedDict()
        # The problem last reported per group of a set with not-ready events on (core/observe/notready.py).
        self._said: dict[tuple[str, str], dict[str, Diagnosis]] = {}

    def explain(self, key: ObjectKey) -> None:
        """Opt-in GroupNotReady events: say when the pod's group runs into a problem, and when it is
        ready again (core/observe/notready.py). Reads the caches only; a set without the annotation costs
        one annotation lookup."""
        pod = self._informers.pod(key.namespace, key.name)
        if pod is None or c.LABEL_SET_NAME not in labels_of(pod):
            return
        set_key = (key.namespace, labels_of(pod)[c.LABEL_SET_NAME])
        lws = lws_of(self._informers, pod)
        if lws is None or not wants_not_ready_events(lws):
            self._said.pop(set_key, None)
            return
        group = labels_of(pod).get(c.LABEL_GROUP_INDEX)
        if group is None:
            return
        members = members_to_diagnose(self._informers.group_pods(key.namespace, set_key[1], group))
        leader = members.leader
        try:
            now = diagnose_group(
                lws=lws,
                leader=leader,
                worker_sts=self._informers.statefulset(key.namespace, name_of(leader)) if leader else None,
                pods=members.pods,
                failures={},  # the scheduler's words come from the pods' Unschedulable condition
            )
        except Exception as err:  # an explanation must never stop the group's reconcile
            log.warning("cannot diagnose the group", group=group, error=str(err))
            return
        said_of_set = self._said.setdefault(set_key, {})
        said, event = next_report(group, said_of_set.get(group), now, leader)
        if said is None:
            said_of_set.pop(group, None)
        else:
            said_of_set[group] = said
        if event is not None:
            record(self._recorder, lws, event)

    def time_to_ready(self, pod: MutableObj, lws: MutableObj) -> None:
        """Observe each phase of a group incarnation's way to ready, once, when it gets there."""
        if is_deleting(pod) or not pod_ready(pod):
            return
        namespace = namespace_of(pod)
        leader_name = name_of(pod) if is_leader_pod(pod) else leader_name_for_worker(pod)
        leader = self._informers.pod(namespace, leader_name) if leader_name else None
        if leader is None or uid_of(leader) in self._observed:
            return
        pods = self._informers.group_pods(
            namespace, name_of(lws), labels_of(leader).get(c.LABEL_GROUP_INDEX, "")
        )
        milestones = group_milestones(leader, pods, lws_size(lws))
        if milestones is None:
            return
        self._observed[uid_of(leader)] = None
        while len(self._observed) > _OBSERVED_MEMORY:
            self._observed.popitem(last=False)
        if ready_before(milestones.ready, self._started):
            return
        for phase, seconds in milestones.durations().items():
            self._metrics.time_to_ready.labels(namespace, name_of(lws), phase).observe(seconds)

    def recreated(self, namespace: str, lws_name: str, cause: str) -> None:
        """Count a group recreation that happened, by the failure ledger's cause."""
        self._metrics.recreations.labels(namespace, lws_name, cause).inc()
