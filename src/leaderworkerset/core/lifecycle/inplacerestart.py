"""In-place group restart (`leaderworkerset.dev/restart-strategy: InPlace`, docs/in-place-restart.md).

The kubelet's `RestartAllContainers` container-restart rule (KEP-5532) restarts every container of
*one* pod, keeping the pod, its node and its IP. A group is several pods, so:

  * the pod webhook gives every container of a new pod of the set a rule "any exit → restart all
    containers of this pod", and adds a restart agent sidecar whose own rule turns its dedicated exit
    code into the same (`equip_pod`); the templates are untouched, so nothing rolls;
  * the controller sees a pod's restart count rise. A restart it did not order is a *failure*: it
    bumps the group's epoch on every pod (`<epoch> <failed pod>` in an annotation); each agent reads
    it from a downward-API file and exits, restarting its pod in place. The restarts that follow are
    *ordered* (the pod carries `restart-ordered` until its count rises) and are not failures;
  * each failure is counted once: the leader records the group's state (epoch, streak, the failure
    answered, the budget count claimed) with a conditional write before anything else is written,
    so a retry after a crash finishes the same restart instead of counting another;
  * a group that keeps failing in place (`FALLBACK_AFTER` restarts in a row, a failure less than
    `STREAK_RESET_SECONDS` after the previous one) is recreated instead, which starts afresh;
  * a group restart breaks the group's connections, and a real worker exits when its leader goes away
    (the probe workload does, as a collective would): until the group has *settled* (every pod Ready,
    every ordered restart done) an unordered restart is part of the restart in progress and is
    *absorbed* — accounted, not counted — up to one per pod of the group; more is a new failure, so a
    group that crash-loops while restarting still reaches the fallback and the budget.

What the kubelet reports (observed on 1.37.2): after a restart-all every container's restart count
rises by one and its last state is `RestartingAllContainers`, exit code 137, whichever container
triggered it: the status cannot tell a failure from an ordered restart, hence the bookkeeping here.
The restart count of a pod is the highest of its containers' (a restart-all raises them all by one,
not necessarily in the same status update).

Everything here is pure; controllers/group/inplacerestart.py reads, decides with these and writes.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.groups.state import pod_ready
from leaderworkerset.core.objects import Obj, annotations_of, is_deleting, metadata, name_of, uid_of

IN_PLACE = ext.RESTART_STRATEGY_IN_PLACE
# The agent's exit code that means "restart my pod in place" (its own RestartAllContainers rule).
AGENT_EXIT_CODE = 88
AGENT_CONTAINER = "lws-restart-agent"
AGENT_VOLUME = "lws-restart-epoch"
AGENT_MOUNT_PATH = "/etc/lws-restart"
AGENT_EPOCH_FILE = "epoch"
# In-place restarts in a row before the next failure recreates the group instead.
FALLBACK_AFTER = 3
# A failure this long after the group's previous in-place restart starts a new streak.
STREAK_RESET_SECONDS = 600.0
# The agent is a small Python process: enough to start the interpreter and read a file.
AGENT_RESOURCES: Mapping[str, Any] = {
    "requests": {"cpu": "5m", "memory": "16Mi"},
    "limits": {"memory": "64Mi"},
}


# --- the annotation on the set -------------------------------------------------------------------


def restart_strategy_problem(value: str, lws: Obj) -> str | None:
    """The rule `value` breaks on `lws`, or None (the set-annotation table's check)."""
    if value != IN_PLACE:
        return f"must be {IN_PLACE!r}"
    policy = ((lws.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("restartPolicy")
    if policy != c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART:
        return (
            f"needs spec.leaderWorkerTemplate.restartPolicy {c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART}"
            f" (it is {policy or 'unset'})"
        )
    return None


def wants_in_place_restart(lws: Obj) -> bool:
    """The set asks for in-place restarts, with a value the rules accept."""
    value = annotations_of(lws).get(ext.ANNOTATION_RESTART_STRATEGY)
    return value is not None and restart_strategy_problem(value, lws) is None


@dataclass(frozen=True)
class Prerequisites:
    """What the manager knows of what in-place restarts need beyond a valid annotation."""

    # Why the cluster cannot restart all containers of a pod (the webhooks' dry-run probe), or None:
    # it can, or the manager has not asked yet.
    unsupported: str | None = None
    # Whether the pod webhook has an agent image to equip new pods with.
    agent_image: bool = True


def unavailable(lws: Obj, prerequisites: Prerequisites) -> tuple[str, str] | None:
    """(reason, message) of the condition that says an InPlace set's failed groups are recreated
    although it asks otherwise, or None: it does not ask, or nothing stands in the way."""
    if not wants_in_place_restart(lws):
        return None
    if prerequisites.unsupported is not None:
        return (
            ext.REASON_RESTART_ALL_CONTAINERS_UNSUPPORTED,
            f"{unsupported_message(prerequisites.unsupported)}; failed groups are recreated",
        )
    if not prerequisites.agent_image:
        return (
            ext.REASON_NO_RESTART_AGENT_IMAGE,
            f"the manager has no restart agent image ({ext.ENV_RESTART_AGENT_IMAGE} is unset), so the pod "
            "webhook equips no pod with the agent and the restart rules; failed groups are recreated",
        )
    return None


def unsupported_message(reason: str) -> str:
    """Why the webhook refuses the annotation on a cluster without RestartAllContainers."""
    return (
        f"needs the container restart rule action RestartAllContainers "
        f"(spec.containers[*].restartPolicyRules[*].action), which this cluster does not support: {reason}"
    )


# --- what the webhook adds to a new pod ------------------------------------------------------------


def _all_exits_rule() -> dict[str, Any]:
    # NotIn an empty set: every exit code, 0 included (a server that exits is a failed group member).
    return {"action": "RestartAllContainers", "exitCodes": {"operator": "NotIn", "values": []}}


def agent_container(image: str) -> dict[str, Any]:
    return {
        "name": AGENT_CONTAINER,
        "image": image,
        "command": ["python", "-m", "leaderworkerset.agent"],
        "args": [f"{AGENT_MOUNT_PATH}/{AGENT_EPOCH_FILE}"],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "restartPolicy": "Always",  # a sidecar: started before and alongside the workload
        "restartPolicyRules": [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [AGENT_EXIT_CODE]}}
        ],
        "resources": dict(AGENT_RESOURCES),
        "volumeMounts": [{"name": AGENT_VOLUME, "mountPath": AGENT_MOUNT_PATH, "readOnly": True}],
    }


def agent_volume() -> dict[str, Any]:
    path = f"metadata.annotations['{ext.ANNOTATION_RESTART_EPOCH}']"
    return {
        "name": AGENT_VOLUME,
        "downwardAPI": {"items": [{"path": AGENT_EPOCH_FILE, "fieldRef": {"fieldPath": path}}]},
    }


def equip_pod(pod: dict[str, Any], image: str) -> None:
    """Give `pod` (a new pod of an InPlace set, mutated in place) the restart rules and the agent.

    Every workload container and user sidecar gets the all-exits rule after its own rules (a user's
    rule that matches first wins); a container-level restart policy is required with rules, and
    `Always` is what a StatefulSet's pod-level policy already says. Run-to-completion init containers
    are left alone: they run again anyway when the pod restarts in place.
    """
    spec = pod.setdefault("spec", {})
    for container in spec.get("containers") or []:
        _add_rule(container)
    for container in spec.get("initContainers") or []:
        if container.get("restartPolicy") == "Always":
            _add_rule(container)
    init = spec.setdefault("initContainers", [])
    if not any(ctr.get("name") == AGENT_CONTAINER for ctr in init):
        init.insert(0, agent_container(image))
    volumes = spec.setdefault("volumes", [])
    if not any(vol.get("name") == AGENT_VOLUME for vol in volumes):
        volumes.append(agent_volume())
    pod.setdefault("metadata", {}).setdefault("annotations", {})[ext.ANNOTATION_RESTART_AGENT] = (
        AGENT_CONTAINER
    )


def _add_rule(container: dict[str, Any]) -> None:
    container.setdefault("restartPolicy", "Always")
    rules = container.setdefault("restartPolicyRules", [])
    if _all_exits_rule() not in rules:
        rules.append(_all_exits_rule())


def equipped(pod: Obj) -> bool:
    return ext.ANNOTATION_RESTART_AGENT in annotations_of(pod)


# --- one pod's restarts -----------------------------------------------------------------------------


def pod_restarts(pod: Obj) -> int:
    """The highest restart count of the pod's containers (init containers included)."""
    status = pod.get("status") or {}
    statuses = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def _int_annotation(pod: Obj, key: str) -> int | None:
    raw = annotations_of(pod).get(key)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def restarts_seen(pod: Obj) -> int:
    return _int_annotation(pod, ext.ANNOTATION_RESTARTS_SEEN) or 0


class PodRestart(enum.Enum):
    NONE = "none"  # nothing new since the controller last looked
    ORDERED = "ordered"  # the restart the controller asked for: account it, nothing else
    FAILURE = "failure"  # a restart nobody asked for: the group restarts in place


def classify_pod_restart(pod: Obj) -> PodRestart:
    if pod_restarts(pod) <= restarts_seen(pod):
        return PodRestart.NONE
    if _int_annotation(pod, ext.ANNOTATION_RESTART_ORDERED) is not None:
        return PodRestart.ORDERED
    return PodRestart.FAILURE


def failure_id(pod: Obj) -> str:
    """Names one failure: the pod incarnation and the restart count that reported it."""
    return f"{uid_of(pod)}/{pod_restarts(pod)}"


def epoch_value(epoch: int, origin: str) -> str:
    return f"{epoch} {origin}"


def seen_patch(pod: Obj) -> dict[str, Any]:
    """Account the pod's current restarts (an ordered restart done, or the failure being answered)."""
    return {
        "metadata": {
            "annotations": {
                ext.ANNOTATION_RESTARTS_SEEN: str(pod_restarts(pod)),
                ext.ANNOTATION_RESTART_ORDERED: None,
            }
        }
    }


def order_patch(pod: Obj, epoch: int, origin: str) -> dict[str, Any] | None:
    """Tell a pod of the group about `epoch`. The failed pod itself restarted already: it only
    learns the epoch (its agent ignores an epoch its own pod started) and has its failure accounted;
    any other pod is ordered to restart. None when the pod already knows (a retry)."""
    annotations = annotations_of(pod)
    value = epoch_value(epoch, origin)
    if annotations.get(ext.ANNOTATION_RESTART_EPOCH) == value:
        return None
    changes: dict[str, str | None] = {
        ext.ANNOTATION_RESTART_EPOCH: value,
        # Accounted up to now: for another pod, the restart this order causes is the next rise.
        ext.ANNOTATION_RESTARTS_SEEN: str(pod_restarts(pod)),
        ext.ANNOTATION_RESTART_ORDERED: None if name_of(pod) == origin else str(epoch),
    }
    return {"metadata": {"annotations": changes}}


# --- the group's state on its leader ---------------------------------------------------------------


@dataclass(frozen=True)
class InPlaceRestartState:
    epoch: int = 0
    streak: int = 0  # in-place restarts in a row
    last: float | None = None  # when the last one was decided (epoch seconds)
    failure: str = ""  # the failure_id it answered
    origin: str = ""  # the failed pod's name
    count: int | None = None  # the maxGroupRestarts count it claimed, if the set has a budget
    settled: bool = False  # every pod Ready again since this epoch, no ordered restart pending
    absorbed: int = 0  # unordered restarts taken as part of this epoch's restart (before it settled)
    absorbed_failure: str = ""  # the last one (a retry after a crash absorbs it once)


def in_place_restart_state(leader: Obj) -> InPlaceRestartState:
    """The leader's state; an unreadable one is a fresh start (never blocks recovery)."""
    raw = annotations_of(leader).get(ext.ANNOTATION_IN_PLACE_RESTARTS)
    if not raw:
        return InPlaceRestartState()
    try:
        data = json.loads(raw)
        return InPlaceRestartState(
            epoch=int(data.get("epoch", 0)),
            streak=int(data.get("streak", 0)),
            last=float(data["last"]) if data.get("last") is not None else None,
            failure=str(data.get("failure", "")),
            origin=str(data.get("origin", "")),
            count=int(data["count"]) if data.get("count") is not None else None,
            settled=bool(data.get("settled", False)),
            absorbed=int(data.get("absorbed", 0)),
            absorbed_failure=str(data.get("absorbedFailure", "")),
        )
    except (ValueError, TypeError, AttributeError):
        return InPlaceRestartState()


def state_patch(leader: Obj, state: InPlaceRestartState) -> dict[str, Any]:
    """The claim: conditional on the read's resourceVersion, so two deciders never both win."""
    body = {k: v for k, v in vars(state).items() if v is not None}
    body["absorbedFailure"] = body.pop("absorbed_failure")
    return {
        "metadata": {
            "resourceVersion": metadata(leader).get("resourceVersion"),
            "annotations": {ext.ANNOTATION_IN_PLACE_RESTARTS: json.dumps(body, sort_keys=True)},
        }
    }


class InPlaceRestartStep(enum.Enum):
    RESTART = "restart"  # claim the new state, count, record, order the group
    FINISH = "finish"  # this failure was claimed already (a retry): finish its writes
    ABSORB = "absorb"  # part of the restart in progress: claim it in the state, account it, no more
    RECREATE = "recreate"  # fall back: recreate the group as without the annotation


@dataclass(frozen=True)
class InPlaceRestartDecision:
    step: InPlaceRestartStep
    state: InPlaceRestartState
    reason: str = ""


def decide_in_place_restart(
    state: InPlaceRestartState,
    failure: str,
    origin: str,
    *,
    now: float,
    budget_count: int | None,
    group_size: int,
    fallback_after: int = FALLBACK_AFTER,
    reset_seconds: float = STREAK_RESET_SECONDS,
) -> InPlaceRestartDecision:
    """What to do about one failure of a group. `budget_count` is the count this restart would
    consume (None without a budget; a spent budget is the recreation path's to handle)."""
    if state.failure == failure:
        return InPlaceRestartDecision(InPlaceRestartStep.FINISH, state, "already claimed")
    if state.epoch and not state.settled:
        if state.absorbed_failure == failure:
            return InPlaceRestartDecision(InPlaceRestartStep.ABSORB, state, "already absorbed")
        if state.absorbed < group_size:
            absorbed = replace(state, absorbed=state.absorbed + 1, absorbed_failure=failure)
            return InPlaceRestartDecision(
                InPlaceRestartStep.ABSORB, absorbed, "part of the group restart in progress"
            )
    streak = state.streak
    if state.last is None or now - state.last >= reset_seconds:
        streak = 0
    if streak >= fallback_after:
        return InPlaceRestartDecision(
            InPlaceRestartStep.RECREATE,
            state,
            f"{streak} in-place restarts in a row; recreating the group instead",
        )
    new = InPlaceRestartState(
        epoch=state.epoch + 1, streak=streak + 1, last=now, failure=failure, origin=origin, count=budget_count
    )
    return InPlaceRestartDecision(InPlaceRestartStep.RESTART, new)


def settles(state: InPlaceRestartState, pods: Iterable[Obj], size: int) -> bool:
    """Whether the group's restart in progress is over: `size` live pods, every one Ready, every
    restart accounted and none ordered still pending."""
    if not state.epoch or state.settled:
        return False
    live = [p for p in pods if not is_deleting(p)]
    return len(live) == size and all(
        pod_ready(p)
        and classify_pod_restart(p) is PodRestart.NONE
        and ext.ANNOTATION_RESTART_ORDERED not in annotations_of(p)
        for p in live
    )


def settled_patch(leader: Obj, state: InPlaceRestartState) -> dict[str, Any]:
    return state_patch(leader, replace(state, settled=True))


def unequipped(pods: Iterable[Obj]) -> list[str]:
    """The group's pods the webhook did not equip (admitted before the set opted in, or with the
    webhooks off): the group cannot restart in place."""
    return sorted(name_of(p) for p in pods if not equipped(p))
