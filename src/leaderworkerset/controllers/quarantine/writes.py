"""Node quarantine's writes (core/quarantine/): the LWS's `leaderworkerset.dev/quarantined-nodes`
annotation, its events and its metric.

Two moments:
* `after_failure` — the pod controller, once a failure is in the ledger and before it deletes the
  group's leader: a node that now qualifies is quarantined (and announced) before the new group's
  pods are admitted, so the pod webhook keeps them off it;
* `release` — the LWS controller, on every reconcile of a set with a quarantine: a node whose
  cool-down is over is released (and announced); the reconcile is requeued for the next release.

The state lives on the LWS (it survives a manager restart), written on a fresh read with its
resourceVersion. Only metadata changes: no generation bump, no revision, nothing rolls. A failed
write is logged and the recreation goes on: the quarantine steers new groups, it never holds one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.events import error_text, record
from leaderworkerset.controllers.quarantine.metrics import QuarantineMetrics
from leaderworkerset.controllers.quarantine.taints import NodeTaints
from leaderworkerset.controllers.restartbudget import mutate_lws_annotations
from leaderworkerset.core.lifecycle.ledger import LedgerEntry
from leaderworkerset.core.objects import ControllerEvent, MutableObj, annotations_of, name_of, namespace_of
from leaderworkerset.core.quarantine import decision as qd
from leaderworkerset.core.quarantine.policy import quarantine_policy
from leaderworkerset.core.quarantine.taint import tainted_elsewhere, to_taint, to_untaint, with_outcomes
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import NODES

log = structlog.get_logger(__name__)


def _evidence_text(failures: Sequence[qd.Evidence]) -> str:
    return "; ".join(f"{e.time} group {e.group} pod {e.pod} {e.cause}" for e in failures)


def decision_events(
    decision: qd.QuarantineDecision, window: float | None = None, *, opted_out: bool = False
) -> list[ControllerEvent]:
    """What a decision announces: each quarantine (Warning), release (Normal) and held-back node.
    `opted_out`: the releases are the set dropping (or spoiling) its quarantine annotation."""
    events = []
    for q in decision.added:
        within = f" within {window:g}s" if window is not None else ""
        message = (
            f"Node {q.node} quarantined until {q.until}: {len(q.failures)} failures{within} "
            f"({_evidence_text(q.failures)}); new pods of this set avoid it"
        )
        events.append(
            ControllerEvent(
                c.EVENT_TYPE_WARNING, ext.EVENT_NODE_QUARANTINED, c.EVENT_ACTION_RECONCILE, message
            )
        )
    for q in decision.released:
        message = f"Node {q.node} released: its quarantine since {q.since} ended at {q.until}"
        if opted_out:
            message = f"Node {q.node} released: the set no longer asks for a quarantine (since {q.since})"
        events.append(
            ControllerEvent(c.EVENT_TYPE_NORMAL, ext.EVENT_NODE_RELEASED, c.EVENT_ACTION_RECONCILE, message)
        )
    if decision.held_back:
        message = (
            f"Nodes {', '.join(decision.held_back)} failed often enough to be quarantined, but the set "
            "already quarantines as many of its schedulable nodes as it may"
        )
        events.append(
            ControllerEvent(
                c.EVENT_TYPE_WARNING, ext.EVENT_NODE_QUARANTINE_LIMITED, c.EVENT_ACTION_RECONCILE, message
            )
        )
    return events


def _state(annotations: Mapping[str, str]) -> list[qd.Quarantine]:
    return qd.decode_state(annotations.get(ext.ANNOTATION_QUARANTINED_NODES))


class NodeQuarantine:
    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder,
        clock: Clock,
        metrics: QuarantineMetrics | None = None,
        sets: Callable[[], Iterable[MutableObj]] = tuple,
    ) -> None:
        self._client = client
        self._recorder = recorder
        self._clock = clock
        self._metrics = metrics
        self._sets = sets  # every LWS (the cache): whose quarantines hold a node tainted
        self._taints = NodeTaints(client, recorder)

    async def after_failure(self, lws: MutableObj, entries: Sequence[LedgerEntry]) -> None:
        """Quarantine the nodes `entries` (the set's ledger, this failure included) now implicate."""
        policy = quarantine_policy(lws)
        if policy is None:
            return
        now = self._clock.wall().timestamp()
        if not qd.qualifying_nodes(policy, entries, _state(annotations_of(lws)), now=now):
            return  # the usual case: no LIST of the cluster's nodes
        try:
            pool = qd.schedulable_nodes(lws, await self._client.list(NODES, None))
            decided: list[qd.QuarantineDecision] = []

            def update(annotations: Mapping[str, str]) -> Mapping[str, str | None] | None:
                decided[:] = [
                    qd.decide_quarantine(policy, entries, _state(annotations), now=now, schedulable=pool)
                ]
                return self._changes(decided[0])

            written = await mutate_lws_annotations(self._client, namespace_of(lws), name_of(lws), update)
        except Exception as err:
            log.warning("node quarantine not decided", lws=name_of(lws), error=error_text(err))
            return
        if decided and (written is not None or decided[0].held_back):
            self._announce(lws, decided[0], policy.window)

    async def release(self, lws: MutableObj, key: ObjectKey) -> float | None:
        """Release the nodes whose cool-down is over (all of them when the set no longer asks for a
        quarantine) and set the metric; the seconds until the next release, if any."""
        raw = annotations_of(lws).get(ext.ANNOTATION_QUARANTINED_NODES)
        if raw is None:
            if self._metrics is not None and quarantine_policy(lws) is None:
                self._metrics.forget(key)
            elif self._metrics is not None:
                self._metrics.observe(key, 0)
            return None
        now = self._clock.wall().timestamp()
        opted_in = quarantine_policy(lws) is not None
        decision = qd.release_expired(qd.decode_state(raw), now if opted_in else float("inf"))
        if decision.changed:
            # A tainted node is freed first (only our taint, and not while another set holds it).
            held = tainted_elsewhere(self._sets(), (key.namespace, key.name), now)
            await self._taints.untaint(lws, to_untaint(decision.released, held))
            decided: list[qd.QuarantineDecision] = []

            def update(annotations: Mapping[str, str]) -> Mapping[str, str | None] | None:
                decided[:] = [qd.release_expired(_state(annotations), now if opted_in else float("inf"))]
                return self._changes(decided[0])

            if await mutate_lws_annotations(self._client, key.namespace, key.name, update) is not None:
                self._announce(lws, decided[0], opted_out=not opted_in)
            decision = decided[0] if decided else decision
        await self._taint(lws, key, decision.state)
        if self._metrics is not None:
            self._metrics.observe(key, len(decision.state))
        return qd.next_release_in(decision.state, now)

    async def _taint(self, lws: MutableObj, key: ObjectKey, state: list[qd.Quarantine]) -> None:
        """Taint mode: taint the quarantined nodes not tried yet, and record each outcome."""
        outcomes = await self._taints.taint(lws, to_taint(lws, state))
        if not outcomes:
            return

        def update(annotations: Mapping[str, str]) -> Mapping[str, str | None] | None:
            current = _state(annotations)
            recorded = with_outcomes(current, outcomes)
            return (
                None if recorded == current else {ext.ANNOTATION_QUARANTINED_NODES: qd.encode_state(recorded)}
            )

        try:
            await mutate_lws_annotations(self._client, key.namespace, key.name, update)
        except Exception as err:
            log.warning("node taint outcome not recorded", lws=name_of(lws), error=error_text(err))

    def forget(self, key: ObjectKey) -> None:
        if self._metrics is not None:
            self._metrics.forget(key)

    @staticmethod
    def _changes(decision: qd.QuarantineDecision) -> Mapping[str, str | None] | None:
        if not decision.changed:
            return None
        return {ext.ANNOTATION_QUARANTINED_NODES: qd.encode_state(decision.state)}

    def _announce(
        self,
        lws: MutableObj,
        decision: qd.QuarantineDecision,
        window: float | None = None,
        *,
        opted_out: bool = False,
    ) -> None:
        for event in decision_events(decision, window, opted_out=opted_out):
            log.info("node quarantine", lws=name_of(lws), reason=event.reason, message=event.message)
            record(self._recorder, lws, event)
