"""`lws_status_condition{namespace,lws,condition}`: 1 while that condition of a LeaderWorkerSet's
status is True, 0 while it is False or Unknown, for every condition the status carries.

What an alert needs and the other families cannot say: `Degraded` (a group spent its restart
budget, `maxGroupRestarts`, and automatic recovery stopped) and `RolloutProgressDeadlineExceeded`
(a rollout step halted at its progress deadline). Set by the LWS controller from the status each
round leaves (written or already stored), registered on the manager's injectable registry like the
rollout and group families; the set's series go away with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from leaderworkerset.runtime.objects import ObjectKey

STATUS_CONDITION = "lws_status_condition"


class ConditionMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._gauge = Gauge(
            STATUS_CONDITION,
            "1 while the named condition of a LeaderWorkerSet's status is True, 0 otherwise "
            "(e.g. Degraded: a group exhausted its restart budget; RolloutProgressDeadlineExceeded)",
            ("namespace", "lws", "condition"),
            registry=registry,
        )
        self._seen: dict[ObjectKey, set[str]] = {}

    def observe(self, key: ObjectKey, status: Mapping[str, Any]) -> None:
        conditions = {
            str(cond["type"]): cond.get("status") == "True"
            for cond in status.get("conditions") or []
            if cond.get("type")
        }
        for gone in self._seen.get(key, set()) - set(conditions):
            with contextlib.suppress(KeyError):
                self._gauge.remove(key.namespace, key.name, gone)
        for kind, true in conditions.items():
            self._gauge.labels(key.namespace, key.name, kind).set(1 if true else 0)
        self._seen[key] = set(conditions)

    def forget(self, key: ObjectKey) -> None:
        """The LWS is gone: drop its series."""
        for kind in self._seen.pop(key, set()):
            with contextlib.suppress(KeyError):
                self._gauge.remove(key.namespace, key.name, kind)
