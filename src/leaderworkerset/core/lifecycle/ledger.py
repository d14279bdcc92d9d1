"""The per-group failure ledger: why a group was recreated, kept per LWS.

Upstream's only trace of a group recreation is a `RecreateGroup` event that names the pod, expires
after an hour and says nothing of the cause. Here each recreation (and each back-off wait and each
exhausted restart budget) becomes one `LedgerEntry`: when, which group, the trigger pod and
container, the cause, the exit code and the node. `classify_trigger` reads the cause from the pod
the restart policy acted on, most specific signal first:

1. the pod's `DisruptionTarget` condition (Kubernetes says who disrupted it): preemption by the
   scheduler, eviction (Eviction API or node pressure), or the node going away (taint manager,
   pod GC);
2. the pod's own `Evicted` / `Preempting` status reason (kubelet-side eviction and preemption);
3. the container that failed: OOM kill, a liveness/startup probe kill (the kubelet's `Unhealthy`
   events name the container), or its exit code;
4. a pod deleted with no container failure: `node-not-ready` when its node is not Ready, else
   a plain `deletion` (kubectl delete, a drain, a controller);
5. otherwise `unknown` (e.g. a restart the kubelet reported without the terminated state).

Pure: JSON dicts in, entries and ConfigMap documents out; the shell (controllers/group/ledger.py) reads
and writes.
"""

from __future__ import annotations

import datetime
import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.conditions import format_time_ms
from leaderworkerset.core.objects import Obj, is_deleting, labels_of, name_of

# Entries kept per LWS: oldest dropped first. 100 entries of ~300 bytes stay far below a
# ConfigMap's 1 MiB, and cover a crash loop long enough to see its shape.
LEDGER_CAPACITY = 100
DATA_ENTRIES = "entries"
DATA_BACKOFF = "backoff"

# Kubernetes' own strings (pod conditions, kubelet reasons), not upstream lws ones.
CONDITION_DISRUPTION_TARGET = "DisruptionTarget"
DISRUPTION_PREEMPTION = "PreemptionByScheduler"
DISRUPTION_EVICTION_API = "EvictionByEvictionAPI"
DISRUPTION_KUBELET = "TerminationByKubelet"
DISRUPTION_TAINT_MANAGER = "DeletionByTaintManager"
DISRUPTION_POD_GC = "DeletionByPodGC"
POD_REASON_EVICTED = "Evicted"
POD_REASON_PREEMPTING = "Preempting"
TERMINATED_OOM_KILLED = "OOMKilled"
# A kubelet probe kill ends the container with SIGKILL (137) or, after a grace period, SIGTERM (143).
PROBE_KILL_EXIT_CODES = (137, 143)


class Cause(enum.StrEnum):
    EXIT_CODE = "exit-code"
    OOM_KILLED = "oom-killed"
    EVICTION = "eviction"
    PREEMPTION = "preemption"
    NODE_NOT_READY = "node-not-ready"
    DELETION = "deletion"
    PROBE_FAILURE = "probe-failure"
    UNKNOWN = "unknown"


class Action(enum.StrEnum):
    RECREATED = "recreated"
    BACKING_OFF = "backing-off"
    BUDGET_EXHAUSTED = "budget-exhausted"
    RESTARTED_IN_PLACE = "restarted-in-place"  # leaderworkerset.dev/restart-strategy: InPlace


_DISRUPTIONS = {
    DISRUPTION_PREEMPTION: Cause.PREEMPTION,
    DISRUPTION_EVICTION_API: Cause.EVICTION,
    DISRUPTION_KUBELET: Cause.EVICTION,
    DISRUPTION_TAINT_MANAGER: Cause.NODE_NOT_READY,
    DISRUPTION_POD_GC: Cause.NODE_NOT_READY,
}
_POD_REASONS = {POD_REASON_EVICTED: Cause.EVICTION, POD_REASON_PREEMPTING: Cause.PREEMPTION}


@dataclass(frozen=True)
class Trigger:
    """What the ledger says about the pod that set off a recreation."""

    cause: Cause
    pod: str
    container: str = ""
    exit_code: int | None = None
    node: str = ""
    detail: str = ""


def _conditions(pod: Obj) -> list[Obj]:
    return list((pod.get("status") or {}).get("conditions") or [])


def _statuses(pod: Obj) -> list[Obj]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


@dataclass(frozen=True)
class _Failure:
    container: str
    terminated: Obj


def failed_container(pod: Obj) -> _Failure | None:
    """The container whose termination is the failure: a current terminated state with a non-zero
    exit (or OOM) first, else the last termination of the most restarted container."""
    current: list[_Failure] = []
    restarted: list[tuple[int, _Failure]] = []
    for status in _statuses(pod):
        name = str(status.get("name") or "")
        terminated = (status.get("state") or {}).get("terminated") or {}
        if terminated and (int(terminated.get("exitCode") or 0) != 0 or terminated.get("reason")):
            current.append(_Failure(name, terminated))
        restarts = int(status.get("restartCount") or 0)
        last = (status.get("lastState") or {}).get("terminated") or {}
        if restarts > 0:
            restarted.append((restarts, _Failure(name, last)))
    failing = [f for f in current if int(f.terminated.get("exitCode") or 0) != 0] or current
    if failing:
        return failing[0]
    if restarted:
        return max(restarted, key=lambda item: item[0])[1]
    return None


def node_ready(node: Obj | None) -> bool | None:
    """The node's Ready condition; None when the node is unknown (not read, or gone)."""
    if node is None:
        return None
    for condition in _conditions(node):
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def classify_trigger(pod: Obj, *, node: Obj | None = None, probe_failures: Iterable[str] = ()) -> Trigger:
    """The cause of the failure signalled by `pod` (live or a deletion snapshot).

    `node` is the pod's node when the shell read it (only needed for a deletion); `probe_failures`
    the containers whose liveness or startup probe the kubelet reported failing.
    """
    name = name_of(pod)
    node_name = str((pod.get("spec") or {}).get("nodeName") or "")
    for condition in _conditions(pod):
        if condition.get("type") == CONDITION_DISRUPTION_TARGET and condition.get("status") == "True":
            reason = str(condition.get("reason") or "")
            cause = _DISRUPTIONS.get(reason, Cause.DELETION)
            return Trigger(cause, name, node=node_name, detail=str(condition.get("message") or reason))
    pod_reason = str((pod.get("status") or {}).get("reason") or "")
    if pod_reason in _POD_REASONS:
        detail = str((pod.get("status") or {}).get("message") or pod_reason)
        return Trigger(_POD_REASONS[pod_reason], name, node=node_name, detail=detail)
    failure = failed_container(pod)
    if failure is not None and failure.terminated:
        code = int(failure.terminated.get("exitCode") or 0)
        reason = str(failure.terminated.get("reason") or "")
        if reason == TERMINATED_OOM_KILLED:
            cause = Cause.OOM_KILLED
        elif code in PROBE_KILL_EXIT_CODES and failure.container in set(probe_failures):
            cause = Cause.PROBE_FAILURE
        else:
            cause = Cause.EXIT_CODE
        return Trigger(cause, name, failure.container, code, node_name, reason)
    if is_deleting(pod):
        if node_name and node_ready(node) is False:
            return Trigger(Cause.NODE_NOT_READY, name, node=node_name, detail=f"node {node_name} not Ready")
        return Trigger(Cause.DELETION, name, node=node_name, detail="pod deleted")
    container = failure.container if failure is not None else ""
    return Trigger(
        Cause.UNKNOWN, name, container, node=node_name, detail="restart without a terminated state"
    )


def needs_node(pod: Obj) -> bool:
    """Whether classifying `pod` depends on its node (a deletion with no other explanation)."""
    return classify_trigger(pod).cause is Cause.DELETION and bool((pod.get("spec") or {}).get("nodeName"))


def needs_probe_events(pod: Obj) -> str | None:
    """The container whose probe events could turn an exit code into a probe failure, if any."""
    trigger = classify_trigger(pod)
    if trigger.cause is Cause.EXIT_CODE and trigger.exit_code in PROBE_KILL_EXIT_CODES:
        return trigger.container
    return None


_PROBE_FAILED_PREFIXES = ("Liveness probe failed", "Startup probe failed")


def probe_failed_containers(events: Iterable[Obj]) -> set[str]:
    """Containers named by the kubelet's `Unhealthy` liveness/startup events (`spec.containers{c}`)."""
    found: set[str] = set()
    for event in events:
        if event.get("reason") != "Unhealthy":
            continue
        if not str(event.get("message") or event.get("note") or "").startswith(_PROBE_FAILED_PREFIXES):
            continue
        path = str((event.get("involvedObject") or event.get("regarding") or {}).get("fieldPath") or "")
        if path.startswith("spec.containers{") and path.endswith("}"):
            found.add(path[len("spec.containers{") : -1])
    return found


# --- entries ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerEntry:
    time: str
    group: str
    action: Action
    trigger: Trigger
    leader_uid: str = ""
    delay_seconds: float | None = None  # the back-off delay this recreation waited (or waits)

    def to_json(self) -> dict[str, Any]:
        t = self.trigger
        doc = {
            "time": self.time,
            "group": self.group,
            "action": str(self.action),
            "cause": str(t.cause),
            "pod": t.pod,
            "container": t.container,
            "exitCode": t.exit_code,
            "node": t.node,
            "detail": t.detail,
            "leaderUID": self.leader_uid,
            "delaySeconds": self.delay_seconds,
        }
        return {k: v for k, v in doc.items() if v not in ("", None)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LedgerEntry | None:
        try:
            code, delay = doc.get("exitCode"), doc.get("delaySeconds")
            trigger = Trigger(
                cause=Cause(doc["cause"]),
                pod=str(doc.get("pod") or ""),
                container=str(doc.get("container") or ""),
                exit_code=None if code is None else int(code),
                node=str(doc.get("node") or ""),
                detail=str(doc.get("detail") or ""),
            )
            return cls(
                time=str(doc["time"]),
                group=str(doc["group"]),
                action=Action(doc["action"]),
                trigger=trigger,
                leader_uid=str(doc.get("leaderUID") or ""),
                delay_seconds=None if delay is None else float(delay),
            )
        except (KeyError, TypeError, ValueError):
            return None


def entry_for(
    trigger: Trigger,
    *,
    group: str,
    action: Action,
    when: datetime.datetime,
    leader_uid: str = "",
    delay_seconds: float | None = None,
) -> LedgerEntry:
    return LedgerEntry(format_time_ms(when), group, action, trigger, leader_uid, delay_seconds)


def group_of(pod: Obj) -> str:
    """The group index label (a Hash group's index too): what `lws status` calls the group."""
    return labels_of(pod).get(c.LABEL_GROUP_INDEX, "")


def appended(
    entries: Sequence[LedgerEntry], entry: LedgerEntry, capacity: int = LEDGER_CAPACITY
) -> list[LedgerEntry]:
    """`entries` plus `entry`, oldest dropped beyond `capacity`; an entry already recorded (same
    time, group, action and leader) is not added twice (a retried write)."""
    if any(e == entry for e in entries):
        return list(entries)
    return [*entries, entry][-capacity:] if capacity > 0 else []


def decode_entries(data: Mapping[str, Any]) -> list[LedgerEntry]:
    try:
        docs = json.loads(str(data.get(DATA_ENTRIES) or "[]"))
    except ValueError:
        return []
    if not isinstance(docs, list):
        return []
    return [e for e in (LedgerEntry.from_json(d) for d in docs if isinstance(d, dict)) if e is not None]


def encode_entries(entries: Iterable[LedgerEntry]) -> str:
    return json.dumps([e.to_json() for e in entries], separators=(",", ":"))


def decode_backoff(data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    try:
        docs = json.loads(str(data.get(DATA_BACKOFF) or "{}"))
    except ValueError:
        return {}
    return {str(k): v for k, v in docs.items() if isinstance(v, dict)} if isinstance(docs, dict) else {}


def encode_backoff(states: Mapping[str, Mapping[str, Any]]) -> str:
    return json.dumps(dict(sorted(states.items())), separators=(",", ":"))


def ledger_name(lws_name: str) -> str:
    return lws_name + ext.LEDGER_CONFIGMAP_SUFFIX
