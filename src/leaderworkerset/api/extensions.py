"""This project's own annotations: behaviour upstream lws does not have.

Every key lives under ``EXTENSION_DOMAIN``, never under upstream's ``*.x-k8s.io`` or ``*.sigs.k8s.io``
prefixes, so upstream's controller (after a swap back) reads none of them and an object that sets
none of them behaves exactly as upstream's does. ``EXTENSIONS`` is the one table of them: the docs
table (``docs/annotations.md``) and the tests that swap to upstream with every feature switched on
read it, so a key added here is documented and swap-tested without a second list to keep in step.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

EXTENSION_DOMAIN: Final = "leaderworkerset.dev"
_PREFIX: Final = EXTENSION_DOMAIN + "/"


class Writer(enum.Enum):
    """Who sets the annotation: a user opting in, or the controller keeping its own state."""

    USER = "user"
    CONTROLLER = "controller"


@dataclass(frozen=True)
class Extension:
    key: str
    on: str  # the kind of object that carries it
    writer: Writer
    values: str  # the accepted values, as the docs state them
    effect: str  # what it does; what happens without it
    # For a USER key: a valid value that switches the feature on. The test that swaps to upstream's
    # controller with every feature on sets each of these, so a new user key is covered by adding it here.
    example: str | None = None


# The restart count a leader incarnation claimed before its count is written, so a controller killed
# between the two writes never counts the same failure twice (core/lifecycle/restartbudget.py).
ANNOTATION_GROUP_RESTART_CLAIM: Final = _PREFIX + "group-restart-claim"
# Opt-in exponential back-off between recreations of the same group (core/lifecycle/backoff.py).
ANNOTATION_RESTART_BACKOFF: Final = _PREFIX + "restart-backoff"
# The LWS condition (and its reason) set when the restart-backoff value cannot be used (an object
# admitted with the webhooks off); removed once the value is fixed or dropped.
CONDITION_RESTART_BACKOFF_INVALID: Final = "RestartBackoffInvalid"
REASON_INVALID_ANNOTATION: Final = "InvalidAnnotation"
# Its reason when the value in force is upstream's typed `leaderWorkerTemplate.restartBackoff`
# (core/lifecycle/backoffsource.py), which wins over the annotation when both are set: the condition
# (and event) that say the annotation is then ignored.
REASON_INVALID_FIELD: Final = "InvalidField"
CONDITION_RESTART_BACKOFF_OVERRIDDEN: Final = "RestartBackoffOverridden"
REASON_ANNOTATION_OVERRIDDEN: Final = "OverriddenByField"
EVENT_RESTART_BACKOFF_OVERRIDDEN: Final = "RestartBackoffOverridden"
# Event reasons of the back-off and the failure ledger (our own; upstream records neither).
EVENT_GROUP_RESTART_BACKOFF: Final = "GroupRestartBackOff"
EVENT_INVALID_RESTART_BACKOFF: Final = "InvalidRestartBackoff"
# The per-LWS failure ledger ConfigMap (controllers/group/ledger.py): `<lws>-failure-ledger`, owned by the
# LWS, created on its first group recreation.
LEDGER_CONFIGMAP_SUFFIX: Final = "-failure-ledger"
LABEL_FAILURE_LEDGER: Final = _PREFIX + "failure-ledger"

# Rollout control (docs/rollout-control.md): hold a rolling update where it is, and stop one whose
# step makes no progress in time.
ANNOTATION_ROLLOUT_PAUSED: Final = _PREFIX + "rollout-paused"
ANNOTATION_ROLLOUT_PROGRESS_DEADLINE: Final = _PREFIX + "rollout-progress-deadline-seconds"
ROLLOUT_PAUSED_TRUE: Final = "true"
ROLLOUT_PAUSED_FALSE: Final = "false"

# Our own status condition types and event reasons. None of them is an upstream type: upstream's
# Progressing/Available/UpdateInProgress keep their meaning, and an object that sets none of the
# annotations above never carries these.
CONDITION_ROLLOUT_PAUSED: Final = "RolloutPaused"
CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED: Final = "RolloutProgressDeadlineExceeded"
CONDITION_ROLLOUT_ANNOTATION_INVALID: Final = "RolloutAnnotationInvalid"
REASON_ROLLOUT_PAUSED: Final = "Paused"
REASON_ROLLOUT_RESUMED: Final = "Resumed"
REASON_ROLLOUT_PROGRESSING: Final = "Progressing"
REASON_ROLLOUT_ANNOTATION_INVALID: Final = REASON_INVALID_ANNOTATION
REASON_ROLLOUT_ANNOTATIONS_VALID: Final = "AnnotationsValid"
EVENT_ROLLOUT_PAUSED: Final = "RolloutPaused"
EVENT_ROLLOUT_RESUMED: Final = "RolloutResumed"
EVENT_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED: Final = "RolloutProgressDeadlineExceeded"
EVENT_ROLLOUT_PROGRESSING_AGAIN: Final = "RolloutProgressing"
EVENT_ROLLOUT_ANNOTATION_INVALID: Final = "RolloutAnnotationInvalid"

# Opt-in GroupNotReady events (core/observe/notready.py, docs/status.md): the `lws status` line of a group
# that runs into a problem, as a Warning event on the LWS.
ANNOTATION_NOT_READY_EVENTS: Final = _PREFIX + "not-ready-events"
NOT_READY_EVENTS_TRUE: Final = "true"
NOT_READY_EVENTS_FALSE: Final = "false"
CONDITION_NOT_READY_EVENTS_INVALID: Final = "NotReadyEventsInvalid"
EVENT_GROUP_NOT_READY: Final = "GroupNotReady"
EVENT_GROUP_READY: Final = "GroupReady"
EVENT_INVALID_NOT_READY_EVENTS: Final = "InvalidNotReadyEvents"

# Capacity-aware surge (core/rollout/surgefallback/, docs/capacity-aware-surge.md): a rolling update
# whose surge groups stay unschedulable this many seconds gives the surge back and replaces groups
# without surge; the controller keeps when it did so in the second key, removed when surge resumes.
ANNOTATION_SURGE_FALLBACK_SECONDS: Final = _PREFIX + "surge-fallback-seconds"
ANNOTATION_SURGE_FALLBACK_SINCE: Final = _PREFIX + "surge-fallback-since"
CONDITION_SURGE_FALLBACK: Final = "SurgeFallback"
CONDITION_SURGE_FALLBACK_INVALID: Final = "SurgeFallbackInvalid"
REASON_SURGE_UNSCHEDULABLE: Final = "SurgeUnschedulable"
REASON_SURGE_RESUMED: Final = "SurgeResumed"
REASON_SURGE_ROLLOUT_COMPLETE: Final = "RolloutComplete"
EVENT_SURGE_FALLBACK: Final = "SurgeFallback"
EVENT_SURGE_RESUMED: Final = "SurgeResumed"
EVENT_INVALID_SURGE_FALLBACK: Final = "InvalidSurgeFallback"

# Node quarantine (docs/node-quarantine.md, core/quarantine/): a node implicated in that many ledger
# failures of the set within the window is avoided by the set's new pods for a cool-down.
ANNOTATION_QUARANTINE_AFTER: Final = _PREFIX + "quarantine-after"
ANNOTATION_QUARANTINE_COOLDOWN: Final = _PREFIX + "quarantine-cooldown"
# The controller's record of the set's quarantined nodes, with the evidence (JSON; survives a restart).
ANNOTATION_QUARANTINED_NODES: Final = _PREFIX + "quarantined-nodes"
CONDITION_QUARANTINE_ANNOTATION_INVALID: Final = "QuarantineAnnotationInvalid"
EVENT_NODE_QUARANTINED: Final = "NodeQuarantined"
EVENT_NODE_RELEASED: Final = "NodeReleased"
EVENT_NODE_QUARANTINE_LIMITED: Final = "NodeQuarantineLimited"
EVENT_INVALID_QUARANTINE: Final = "InvalidQuarantine"
# Opt-in taint mode: the quarantined node is also tainted NoSchedule (cluster-wide), where the manager
# may patch nodes (an opt-in install value; the default install has no node write permission).
ANNOTATION_QUARANTINE_MODE: Final = _PREFIX + "quarantine-mode"
QUARANTINE_MODE_AFFINITY: Final = "Affinity"
QUARANTINE_MODE_TAINT: Final = "Taint"
TAINT_QUARANTINED: Final = _PREFIX + "quarantined-for-failing-groups"
CONDITION_QUARANTINE_TAINT_REFUSED: Final = "QuarantineTaintRefused"
REASON_NODE_PATCH_FORBIDDEN: Final = "NodePatchForbidden"
EVENT_QUARANTINE_TAINT_REFUSED: Final = "QuarantineTaintRefused"
EVENT_NODE_TAINTED: Final = "NodeTainted"
EVENT_NODE_UNTAINTED: Final = "NodeUntainted"

# Group disruption budgets (core/disruptionbudget/, docs/disruption-budgets.md): one PodDisruptionBudget per
# group, owned by the LWS, that lets a drain evict whole groups, at most the budget's worth at a time.
ANNOTATION_DISRUPTION_BUDGET: Final = _PREFIX + "disruption-budget"
# On each PodDisruptionBudget the controller owns: what its informer selects (only ours are cached).
LABEL_GROUP_DISRUPTION_BUDGET: Final = _PREFIX + "group-disruption-budget"
# On a group's PodDisruptionBudget: the pod names a drain was refused on while the group waited.
ANNOTATION_DRAIN_PENDING_PODS: Final = _PREFIX + "drain-pending-pods"
CONDITION_DISRUPTION_BUDGET_INVALID: Final = "DisruptionBudgetInvalid"
EVENT_INVALID_DISRUPTION_BUDGET: Final = "InvalidDisruptionBudget"
# In-place group restart (core/lifecycle/inplacerestart.py, docs/in-place-restart.md): with
# `RecreateGroupOnPodRestart`, a failed container restarts every container of its group where it stands
# (the kubelet's RestartAllContainers rule) instead of recreating the group.
ANNOTATION_RESTART_STRATEGY: Final = _PREFIX + "restart-strategy"
RESTART_STRATEGY_IN_PLACE: Final = "InPlace"
# On each pod (written by the controller, read by the agent sidecar through a downward-API file):
# "<epoch> <pod whose failure started it>".
ANNOTATION_RESTART_EPOCH: Final = _PREFIX + "restart-epoch"
# On each pod: the restart count the controller has accounted for, and (while it is awaited) the epoch
# whose restart the controller ordered; that restart is the controller's, not a failure.
ANNOTATION_RESTARTS_SEEN: Final = _PREFIX + "restarts-seen"
ANNOTATION_RESTART_ORDERED: Final = _PREFIX + "restart-ordered"
# On each pod the webhook equipped: the name of the agent container it added.
ANNOTATION_RESTART_AGENT: Final = _PREFIX + "restart-agent"
# On the leader: the group's in-place restart state (JSON: epoch, streak, last, trigger, count).
ANNOTATION_IN_PLACE_RESTARTS: Final = _PREFIX + "in-place-restarts"
# The manager's environment names the agent's image (its own: the chart and `lws install` set it).
ENV_RESTART_AGENT_IMAGE: Final = "LWS_RESTART_AGENT_IMAGE"


def restart_agent_image(environ: Mapping[str, str]) -> str | None:
    """The agent image a manager with this environment equips pods with (unset or empty: none)."""
    return environ.get(ENV_RESTART_AGENT_IMAGE) or None


CONDITION_RESTART_STRATEGY_INVALID: Final = "RestartStrategyInvalid"
EVENT_INVALID_RESTART_STRATEGY: Final = "InvalidRestartStrategy"
# A valid InPlace strategy this manager cannot honour (the cluster refuses or drops the
# RestartAllContainers rule, or no agent image is configured): failed groups are recreated.
CONDITION_IN_PLACE_RESTART_UNAVAILABLE: Final = "InPlaceRestartUnavailable"
REASON_RESTART_ALL_CONTAINERS_UNSUPPORTED: Final = "RestartAllContainersUnsupported"
REASON_NO_RESTART_AGENT_IMAGE: Final = "NoRestartAgentImage"
EVENT_IN_PLACE_RESTART_UNAVAILABLE: Final = "InPlaceRestartUnavailable"
EVENT_GROUP_RESTARTED_IN_PLACE: Final = "GroupRestartedInPlace"
EVENT_IN_PLACE_RESTART_FALLBACK: Final = "InPlaceRestartFallback"

EVENT_GROUP_RELEASED_FOR_DRAIN: Final = "GroupReleasedForDrain"
EVENT_GROUP_LOCKED_AFTER_DRAIN: Final = "GroupLockedAfterDrain"
# Drain-aware replacement (groupIdentity Hash, core/disruptionbudget/drainsurge.py): on the leader of a
# group on a cordoned node whose replacement the Deployment surges before the group's budget is released.
ANNOTATION_DRAIN_SURGE: Final = _PREFIX + "drain-surge"
EVENT_GROUP_SURGED_FOR_DRAIN: Final = "GroupSurgedForDrain"
EVENT_DRAIN_WITHOUT_SURGE: Final = "DrainWithoutSurge"

# Diff-aware in-place updates (core/rollout/inplaceupdate/, docs/in-place-updates.md).
ANNOTATION_UPDATE_STRATEGY: Final = _PREFIX + "update-strategy"
UPDATE_STRATEGY_IN_PLACE: Final = "InPlaceIfPossible"
UPDATE_STRATEGY_RECREATE: Final = "Recreate"
# On a pod updated in place: the container restarts its update accounts for (restart policy).
ANNOTATION_IN_PLACE_UPDATE_RESTARTS: Final = _PREFIX + "in-place-update-restarts"
# On a pod updated in place: each container whose image the update changed, with its restart count then
# (-1: it had never run); the update waits until each has started again.
ANNOTATION_IN_PLACE_UPDATE_CONTAINERS: Final = _PREFIX + "in-place-update-containers"
CONDITION_UPDATE_STRATEGY_INVALID: Final = "UpdateStrategyInvalid"
EVENT_INVALID_UPDATE_STRATEGY: Final = "InvalidUpdateStrategy"
EVENT_GROUP_UPDATED_IN_PLACE: Final = "GroupUpdatedInPlace"
EVENT_UPDATE_NEEDS_NEW_PODS: Final = "UpdateNeedsNewPods"

EXTENSIONS: Final[tuple[Extension, ...]] = (
    Extension(
        key=ANNOTATION_GROUP_RESTART_CLAIM,
        on="Pod (group leader)",
        writer=Writer.CONTROLLER,
        values="a non-negative integer",
        effect=(
            "the group-restart count this leader incarnation has claimed for maxGroupRestarts; "
            "written before the count on the LeaderWorkerSet so a controller killed in between "
            "counts the failure once"
        ),
    ),
    Extension(
        key=ANNOTATION_RESTART_BACKOFF,
        on="LeaderWorkerSet",
        writer=Writer.USER,
        values=(
            "`base=D[,cap=D][,reset=D]`, Go durations > 0; cap defaults to 5m (at least base), "
            "reset to twice the cap; cap ≥ base, reset ≥ cap; groupIdentity Ordinal only"
        ),
        effect=(
            "the n-th recreation of a group in a row waits min(cap, base·2^(n-2)) after the previous "
            "one (the first is immediate); a failure at least `reset` after the group's last "
            "recreation starts over. Without it a failed group is recreated at once, as upstream. "
            "Upstream main's `leaderWorkerTemplate.restartBackoff`, when set, wins over it (the "
            "annotation is then reported overridden)"
        ),
        example="base=10s,cap=5m,reset=10m",
    ),
    Extension(
        key=ANNOTATION_ROLLOUT_PAUSED,
        on="LeaderWorkerSet (groupIdentity Ordinal)",
        writer=Writer.USER,
        values='`"true"` or `"false"`',
        effect=(
            "`true` holds a rolling update at its current step: the leader StatefulSet's partition "
            "and surge do not move (a new template is frozen behind the partition), while scaling and "
            "group recreation go on; condition `RolloutPaused`; `lws rollout pause` and `resume` set it. "
            "Absent: rollouts run as upstream's"
        ),
        example=ROLLOUT_PAUSED_TRUE,
    ),
    Extension(
        key=ANNOTATION_ROLLOUT_PROGRESS_DEADLINE,
        on="LeaderWorkerSet (groupIdentity Ordinal)",
        writer=Writer.USER,
        values="an integer of seconds, 1 to 31536000",
        effect=(
            "a rollout step whose groups make no progress (no pod of the new revision created or "
            "becoming Ready) for this long is halted like a pause: condition "
            "`RolloutProgressDeadlineExceeded` with the not-ready reason of the groups it waits on, "
            "a Warning event; it advances again once a group progresses or the template changes. "
            "Absent: no deadline"
        ),
        example="600",
    ),
    Extension(
        key=ANNOTATION_NOT_READY_EVENTS,
        on="LeaderWorkerSet",
        writer=Writer.USER,
        values='`"true"` or `"false"`',
        effect=(
            "`true`: when a group runs into a problem it does not grow out of by waiting (a container "
            "that crash-loops, was OOM-killed, cannot pull its image or start; a pod the scheduler "
            "cannot place or a scheduling gate holds; a spent restart budget; a worker name held by a "
            "StatefulSet we did not make), a Warning event `GroupNotReady` on the LeaderWorkerSet gives "
            "the group and the `lws status` line; a Normal event `GroupReady` follows once it is ready. "
            "Absent: no such events"
        ),
        example=NOT_READY_EVENTS_TRUE,
    ),
    Extension(
        key=ANNOTATION_SURGE_FALLBACK_SECONDS,
        on="LeaderWorkerSet (groupIdentity Ordinal), DisaggregatedSet",
        writer=Writer.USER,
        values="an integer of seconds, 1 to 86400",
        effect=(
            "a rolling update whose surge groups stay unschedulable (PodScheduled=False, Unschedulable) "
            "this long gives the surge back and replaces old groups in place, max(maxUnavailable, 1) at a "
            "time; it surges again once the eligible nodes have the accelerators of a surge group free "
            "(checked no sooner than this long after the fallback). On a DisaggregatedSet every role rolls "
            "in place while the target revision's pods are unschedulable. Condition `SurgeFallback`, events "
            "`SurgeFallback` and `SurgeResumed`. Absent: the surge waits for capacity, as upstream"
        ),
        example="300",
    ),
    Extension(
        key=ANNOTATION_SURGE_FALLBACK_SINCE,
        on="LeaderWorkerSet, DisaggregatedSet",
        writer=Writer.CONTROLLER,
        values="an RFC 3339 time",
        effect=(
            "when the controller gave the surge back (surge-fallback-seconds); kept across manager "
            "restarts, removed when surge resumes or the rollout ends. Not part of the template: no "
            "rollout, and upstream's controller ignores it"
        ),
    ),
    Extension(
        key=ANNOTATION_QUARANTINE_AFTER,
        on="LeaderWorkerSet",
        writer=Writer.USER,
        values="`<failures>/<window>`: an integer 1 to 100, a Go duration > 0 (e.g. `3/10m`)",
        effect=(
            "once that many ledger failures of the set's groups (crash, OOM kill, probe kill, node not "
            "ready; not evictions, preemptions or deletions) implicate the same node within the window, "
            "the set's pods created afterwards get a required node-affinity term that keeps them off it "
            "(pods already running are not touched) for the cool-down; at most a third of the set's "
            "schedulable nodes (at least one, never the last); event `NodeQuarantined`/`NodeReleased`, "
            "`lws status` lists them. Absent: nothing is avoided"
        ),
        example="3/10m",
    ),
    Extension(
        key=ANNOTATION_QUARANTINE_COOLDOWN,
        on="LeaderWorkerSet (with quarantine-after)",
        writer=Writer.USER,
        values="a Go duration, not shorter than the quarantine-after window",
        effect=(
            "how long a quarantined node is avoided; absent: the quarantine-after window (never shorter: "
            "the failures that quarantined a node would quarantine it again once released)"
        ),
        example="30m",
    ),
    Extension(
        key=ANNOTATION_QUARANTINE_MODE,
        on="LeaderWorkerSet (with quarantine-after)",
        writer=Writer.USER,
        values='`"Affinity"` (the default) or `"Taint"`',
        effect=(
            "`Taint`: besides the per-pod affinity term, each node the set quarantines is tainted "
            "`leaderworkerset.dev/quarantined-for-failing-groups:NoSchedule` (every workload of the "
            "cluster then avoids it), and the taint is removed when the cool-down ends unless another "
            "set still holds the node tainted; only where the manager may patch nodes (install value "
            "`quarantineTaints.enabled`, off by default), else condition and event "
            "`QuarantineTaintRefused` and the affinity term alone"
        ),
        example="Taint",
    ),
    Extension(
        key=ANNOTATION_QUARANTINED_NODES,
        on="LeaderWorkerSet",
        writer=Writer.CONTROLLER,
        values="JSON: per node, since, until and the failures that implicated it",
        effect=(
            "the set's quarantined nodes, read by the pod webhook when it admits the set's pods; "
            "written when a node is quarantined, a node is dropped once its cool-down ends"
        ),
    ),
    Extension(
        key=ANNOTATION_DISRUPTION_BUDGET,
        on="LeaderWorkerSet",
        writer=Writer.USER,
        values="a whole number of groups ≥ 1, or a percentage of spec.replicas from 1% to 100% (rounded up)",
        effect=(
            "the controller owns one PodDisruptionBudget per group (`<lws>-group-<group>`), closed "
            "unless it releases the group: a group with a pod on a cordoned node is released while "
            "fewer than the budget's groups are released or not Ready, and closed again once it is "
            "Ready off cordoned nodes, so a `kubectl drain` evicts whole groups, at most the budget "
            "at a time. With groupIdentity Hash and maxSurge > 0 (no rollout under way) a Ready group on a "
            "cordoned node is replaced first: the Deployment surges a new group and the old group's "
            "budget is released only once the new one is Ready. Absent: no PodDisruptionBudget is "
            "made, as upstream"
        ),
        example="1",
    ),
    Extension(
        key=ANNOTATION_DRAIN_PENDING_PODS,
        on="PodDisruptionBudget (a group's, ours)",
        writer=Writer.CONTROLLER,
        values="pod names, comma-separated",
        effect=(
            "the group's pods a drain was refused on while the group waited for the budget; if they "
            "are replaced elsewhere under the same names (a rollout, a recreation), the drain retries "
            "those names, so the group is released once; cleared when it is locked again"
        ),
    ),
    Extension(
        key=ANNOTATION_DRAIN_SURGE,
        on="Pod (leader of a groupIdentity Hash group)",
        writer=Writer.CONTROLLER,
        values='`"true"`',
        effect=(
            "the group is on a cordoned node and is being replaced through the set's surge: the leader "
            "Deployment keeps one more leader per marked group (at most maxSurge) until the group is "
            "gone; its budget is released once the replacement is Ready. Removed if the node is "
            "uncordoned first"
        ),
    ),
    Extension(
        key=ANNOTATION_UPDATE_STRATEGY,
        on="LeaderWorkerSet (groupIdentity Ordinal)",
        writer=Writer.USER,
        values=f"`{UPDATE_STRATEGY_IN_PLACE}` or `{UPDATE_STRATEGY_RECREATE}`",
        effect=(
            "`InPlaceIfPossible`: a template change that only touches the pods' labels, annotations or "
            "container images (or adds tolerations) is applied to the running pods group by group, "
            "max(maxUnavailable, 1) groups at a time, keeping pods, nodes and IPs; the StatefulSets end "
            "on the new revision with no pod recreated. Any other change rolls out as upstream. Events "
            "`GroupUpdatedInPlace` (per group), `UpdateNeedsNewPods` (the fields that need new pods). "
            "`Recreate` or absent: every change recreates groups, as upstream"
        ),
        example=UPDATE_STRATEGY_IN_PLACE,
    ),
    Extension(
        key=ANNOTATION_IN_PLACE_UPDATE_RESTARTS,
        on="Pod (of a group updated in place)",
        writer=Writer.CONTROLLER,
        values="`pending`, or an integer",
        effect=(
            "`pending` while the pod's group is updated in place: its container restarts (a new image, a "
            "worker whose leader restarted) are no failure, RecreateGroupOnPodRestart ignores them; once "
            "the group settled, the restart count the update left: only restarts beyond it are failures"
        ),
    ),
    Extension(
        key=ANNOTATION_IN_PLACE_UPDATE_CONTAINERS,
        on="Pod (of a group updated in place)",
        writer=Writer.CONTROLLER,
        values="JSON: container name → its restart count when its image changed (`-1`: never ran)",
        effect=(
            "each of these containers counts as on its new image once it reports the new name or has "
            "started again (the kubelet may report a new image under another name of the same content, "
            "so the reported name alone cannot tell); removed when the group settles"
        ),
    ),
    Extension(
        key=ANNOTATION_RESTART_STRATEGY,
        on="LeaderWorkerSet (restartPolicy RecreateGroupOnPodRestart)",
        writer=Writer.USER,
        values="`InPlace`; the cluster must support the `RestartAllContainers` container-restart rule",
        effect=(
            "a failed container restarts every container of its group where it stands (same pods, "
            "nodes and IPs) instead of recreating the group, counted once by maxGroupRestarts and the "
            "failure ledger (`restarted-in-place`); the 4th failure in a row within 10 minutes "
            "recreates the group. Where the cluster stops supporting the rule or the manager has no "
            "agent image, condition `InPlaceRestartUnavailable` and a Warning event say so (groups are "
            "then recreated). Absent: groups are recreated, as upstream (docs/in-place-restart.md)"
        ),
        example=RESTART_STRATEGY_IN_PLACE,
    ),
    Extension(
        key=ANNOTATION_RESTART_EPOCH,
        on="Pod (of an InPlace set)",
        writer=Writer.CONTROLLER,
        values="`<epoch> <pod>`",
        effect=(
            "the group's in-place restart epoch and the pod whose failure started it; the restart agent "
            "sidecar reads it from a downward-API file and restarts its pod when it changes"
        ),
    ),
    Extension(
        key=ANNOTATION_RESTARTS_SEEN,
        on="Pod (of an InPlace set)",
        writer=Writer.CONTROLLER,
        values="a non-negative integer",
        effect="the pod restart count the controller has accounted for (a higher one is a new restart)",
    ),
    Extension(
        key=ANNOTATION_RESTART_ORDERED,
        on="Pod (of an InPlace set)",
        writer=Writer.CONTROLLER,
        values="an epoch",
        effect=(
            "an in-place restart the controller ordered and awaits: the pod's next restart is not a failure"
        ),
    ),
    Extension(
        key=ANNOTATION_RESTART_AGENT,
        on="Pod (of an InPlace set)",
        writer=Writer.CONTROLLER,
        values="a container name",
        effect="set by the pod webhook on a pod it equipped with the restart rules and the agent sidecar",
    ),
    Extension(
        key=ANNOTATION_IN_PLACE_RESTARTS,
        on="Pod (group leader of an InPlace set)",
        writer=Writer.CONTROLLER,
        values="JSON",
        effect=(
            "the group's in-place restart state: epoch, restarts in a row, the last one's time, the "
            "failure it answered and the restart count it claimed (a retry after a crash counts it once)"
        ),
    ),
)


def user_extensions() -> tuple[Extension, ...]:
    """The keys a user sets to switch a feature on (each with its example value)."""
    return tuple(ext for ext in EXTENSIONS if ext.writer is Writer.USER)


def markdown_table(extensions: tuple[Extension, ...] = EXTENSIONS) -> str:
    """The table in docs/annotations.md (kept in step by a unit test)."""
    rows = ["| annotation | on | set by | values | effect |", "|---|---|---|---|---|"]
    for ext in extensions:
        rows.append(f"| `{ext.key}` | {ext.on} | {ext.writer.value} | {ext.values} | {ext.effect} |")
    return "\n".join(rows) + "\n"
