"""Which nodes a set quarantines: its failure ledger, its policy, the clock and the nodes it could use.

A failure implicates the node its trigger pod ran on when the cause points at the node or at what
runs on it: a container crash or unexplained restart, an OOM kill, a probe kill, the node going not
ready. Evictions, preemptions and plain deletions say nothing bad about a node (a drain, a higher
priority pod, a user) and are not counted. One group incarnation fails once: a back-off wait and the
recreation that follows it are the same failure (same group, same leader UID).

A node with at least ``policy.failures`` such failures within ``policy.window`` is quarantined for
``policy.cooldown``; a quarantine already in force is neither extended nor repeated. At most
``quarantine_limit(n)`` of the ``n`` nodes the set could use are quarantined at once (a third,
rounded down, but one when there are two or more, never the last one): a set whose failures follow
every node (a bad image) must not lock itself out of the cluster. When more nodes qualify than fit,
the worst offenders win: most failures in the window, then the most recent failure, then the name.

Pure: ledger entries and node documents in, the new state out. The state is the JSON document the
controller keeps in the set's ``leaderworkerset.dev/quarantined-nodes`` annotation.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderworkerset.core.conditions import format_time_ms, parse_time
from leaderworkerset.core.lifecycle.ledger import Cause, LedgerEntry
from leaderworkerset.core.objects import Obj
from leaderworkerset.core.quarantine.policy import QuarantinePolicy

COUNTED_CAUSES = frozenset(
    {Cause.EXIT_CODE, Cause.OOM_KILLED, Cause.PROBE_FAILURE, Cause.NODE_NOT_READY, Cause.UNKNOWN}
)
# The evidence kept per quarantined node: the failures that qualified it, newest last.
MAX_EVIDENCE = 10


@dataclass(frozen=True)
class Evidence:
    time: str
    group: str
    pod: str
    cause: str

    def to_json(self) -> dict[str, str]:
        return {"time": self.time, "group": self.group, "pod": self.pod, "cause": self.cause}


@dataclass(frozen=True)
class Quarantine:
    node: str
    since: str
    until: str
    failures: tuple[Evidence, ...] = ()
    taint: str = ""  # taint mode (core/quarantine/taint.py): "" not tried, "tainted" or "refused"

    def until_seconds(self) -> float:
        when = parse_time(self.until)
        return when.timestamp() if when is not None else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "since": self.since,
            "until": self.until,
            "failures": [e.to_json() for e in self.failures],
            **({"taint": self.taint} if self.taint else {}),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Quarantine | None:
        try:
            failures = tuple(
                Evidence(
                    str(f["time"]), str(f.get("group", "")), str(f.get("pod", "")), str(f.get("cause", ""))
                )
                for f in doc.get("failures") or []
            )
            taint = str(doc.get("taint") or "")
            return cls(str(doc["node"]), str(doc["since"]), str(doc["until"]), failures, taint)
        except (KeyError, TypeError, AttributeError):
            return None


def decode_state(raw: str | None) -> list[Quarantine]:
    """The quarantines an annotation value holds; an unreadable value holds none."""
    try:
        docs = json.loads(raw or "[]")
    except ValueError:
        return []
    if not isinstance(docs, list):
        return []
    found = (Quarantine.from_json(d) for d in docs if isinstance(d, dict))
    return [q for q in found if q is not None]


def encode_state(quarantines: Iterable[Quarantine]) -> str | None:
    """The annotation value (None: remove the annotation), nodes in name order."""
    docs = [q.to_json() for q in sorted(quarantines, key=lambda q: q.node)]
    return json.dumps(docs, separators=(",", ":")) if docs else None


def active_nodes(raw: str | None, now: float) -> frozenset[str]:
    """The nodes quarantined at `now` (a cool-down over but not yet released counts as over)."""
    return frozenset(q.node for q in decode_state(raw) if q.until_seconds() > now)


def quarantine_limit(schedulable: int) -> int:
    """How many of `schedulable` nodes may be quarantined at once."""
    if schedulable < 2:
        return 0
    return max(1, schedulable // 3)


def _seconds(text: str) -> float | None:
    when = parse_time(text)
    return when.timestamp() if when is not None else None


def failures_by_node(entries: Iterable[LedgerEntry], *, since: float) -> dict[str, list[Evidence]]:
    """The counted failures after `since`, per node, oldest first, each incarnation once."""
    seen: set[tuple[str, str]] = set()
    found: dict[str, list[Evidence]] = {}
    for entry in entries:
        trigger = entry.trigger
        when = _seconds(entry.time)
        if not trigger.node or trigger.cause not in COUNTED_CAUSES or when is None or when <= since:
            continue
        if entry.leader_uid:
            incarnation = (entry.group, entry.leader_uid)
            if incarnation in seen:
                continue
            seen.add(incarnation)
        evidence = Evidence(entry.time, entry.group, trigger.pod, str(trigger.cause))
        found.setdefault(trigger.node, []).append(evidence)
    return found


def _latest(failures: Sequence[Evidence]) -> float:
    return max((_seconds(e.time) or 0.0) for e in failures)


@dataclass(frozen=True)
class QuarantineDecision:
    kept: list[Quarantine] = field(default_factory=list)  # still in force
    added: list[Quarantine] = field(default_factory=list)  # quarantined now
    released: list[Quarantine] = field(default_factory=list)  # cool-down over
    held_back: list[str] = field(default_factory=list)  # qualified, but the limit is reached

    @property
    def changed(self) -> bool:
        return bool(self.added or self.released)

    @property
    def state(self) -> list[Quarantine]:
        return sorted([*self.kept, *self.added], key=lambda q: q.node)


def release_expired(current: Sequence[Quarantine], now: float) -> QuarantineDecision:
    """Only the clock's part: the quarantines whose cool-down is over are released."""
    kept = [q for q in current if q.until_seconds() > now]
    released = [q for q in current if q.until_seconds() <= now]
    return QuarantineDecision(kept=kept, released=released)


def qualifying_nodes(
    policy: QuarantinePolicy, entries: Sequence[LedgerEntry], current: Sequence[Quarantine], *, now: float
) -> dict[str, list[Evidence]]:
    """The nodes with enough failures in the window that no quarantine in force holds yet (the
    shell asks this first, and lists the cluster's nodes only when there is one)."""
    in_force = {q.node for q in current if q.until_seconds() > now}
    evidence = failures_by_node(entries, since=now - policy.window)
    return {
        node: found
        for node, found in evidence.items()
        if len(found) >= policy.failures and node not in in_force
    }


def decide_quarantine(
    policy: QuarantinePolicy,
    entries: Sequence[LedgerEntry],
    current: Sequence[Quarantine],
    *,
    now: float,
    schedulable: Collection[str],
) -> QuarantineDecision:
    """Release what expired, then quarantine the worst qualifying offenders the limit leaves room for."""
    expired = release_expired(current, now)
    in_force = {q.node for q in expired.kept}
    candidates = qualifying_nodes(policy, entries, expired.kept, now=now)
    qualified = [(node, found) for node, found in candidates.items() if node in schedulable]
    qualified.sort(key=lambda item: (-len(item[1]), -_latest(item[1]), item[0]))
    room = max(0, quarantine_limit(len(set(schedulable) | in_force)) - len(in_force))
    since = datetime.datetime.fromtimestamp(now, datetime.UTC)
    until = since + datetime.timedelta(seconds=policy.cooldown)
    added = [
        Quarantine(node, format_time_ms(since), format_time_ms(until), tuple(found[-MAX_EVIDENCE:]))
        for node, found in qualified[:room]
    ]
    held_back = [node for node, _ in qualified[room:]]
    return QuarantineDecision(expired.kept, added, expired.released, held_back)


def next_release_in(state: Sequence[Quarantine], now: float) -> float | None:
    """Seconds until the earliest cool-down in `state` ends (None when nothing is quarantined)."""
    ends = [q.until_seconds() for q in state]
    return max(0.0, min(ends) - now) if ends else None


# --- the nodes a set could use ----------------------------------------------------------------------


def _template_node_selectors(lws: Obj) -> list[dict[str, str]]:
    template = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    selectors = []
    for key in ("leaderTemplate", "workerTemplate"):
        spec = (template.get(key) or {}).get("spec") or {}
        selector = spec.get("nodeSelector")
        if isinstance(selector, dict) and selector:
            selectors.append({str(k): str(v) for k, v in selector.items()})
    return selectors


def schedulable_nodes(lws: Obj, nodes: Iterable[Obj]) -> list[str]:
    """The nodes the set's pods could be placed on: not cordoned and, when the set's templates have a
    nodeSelector, matching one of them. Readiness is not asked: a node that flaps NotReady is exactly
    one a set may want to avoid when it comes back."""
    selectors = _template_node_selectors(lws)
    names = []
    for node in nodes:
        if (node.get("spec") or {}).get("unschedulable"):
            continue
        labels = (node.get("metadata") or {}).get("labels") or {}
        if selectors and not any(all(labels.get(k) == v for k, v in s.items()) for s in selectors):
            continue
        names.append(str((node.get("metadata") or {}).get("name") or ""))
    return [name for name in names if name]
