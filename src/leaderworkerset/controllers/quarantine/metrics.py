"""Node-quarantine metrics of the LWS controller, registered on the manager's registry.

* `lws_quarantined_nodes{namespace,lws}`: the nodes a set quarantines now (core/quarantine/), set
  on every reconcile of a set that has (or had) a quarantine; the series goes away with the set.

Like the other metrics, the registry is injected: each manager (and each test) has its own.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Gauge

from leaderworkerset.runtime.objects import ObjectKey

QUARANTINED_NODES = "lws_quarantined_nodes"


@dataclass(frozen=True)
class QuarantineMetrics:
    quarantined: Gauge

    def observe(self, key: ObjectKey, count: int) -> None:
        self.quarantined.labels(key.namespace, key.name).set(count)

    def forget(self, key: ObjectKey) -> None:
        with contextlib.suppress(KeyError):  # never observed
            self.quarantined.remove(key.namespace, key.name)


def new_quarantine_metrics(registry: CollectorRegistry | None = None) -> QuarantineMetrics:
    reg = registry if registry is not None else CollectorRegistry()
    return QuarantineMetrics(
        quarantined=Gauge(
            QUARANTINED_NODES,
            "Nodes a LeaderWorkerSet's new pods avoid because they kept failing its groups",
            ("namespace", "lws"),
            registry=reg,
        )
    )
