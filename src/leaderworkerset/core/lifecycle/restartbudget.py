"""Bounded group recovery (`leaderWorkerTemplate.maxGroupRestarts`).

A group that the restart policy would recreate consumes one unit of its budget per recreation.
The budget is per group *and* per template revision: counts live on the LWS in the
`group-restart-counts` annotation as `{"<revisionKey>/<groupIndex>": n}`, so a new revision starts
every group afresh. When the stored count has reached the limit, the group is not recreated any
more: its leader is marked `group-restart-budget-exhausted=true`, every pod of the group gets the
`group-restart-budget-cleanup` finalizer and the leader is deleted (Foreground). The pods stop but
their objects stay — which also stops the leader StatefulSet from re-creating the same-name leader
— until the user sets `recover=true` on the leader, the group is torn down by scale-down or
rollout, or the LWS goes away.

Counting must be exact across retries, stale caches and crashes (an over-count exhausts a group
early; an under-count lets it restart past the limit), so the shell always decides from fresh
reads, and every write here is idempotent:
  * a count only ever moves up through `raise_count` (a retry that sees a higher count is a no-op);
  * before the count is written, the leader pod records the value it is about to consume
    (`ANNOTATION_GROUP_RESTART_CLAIM`). A controller killed between the two writes finds the claim
    on the same leader incarnation and re-applies exactly that value instead of counting again.

Everything here is pure: the I/O shell reads, calls these, and writes the returned patches.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.gocompat import gojson
from leaderworkerset.core.gocompat.strconv import GoParseError, go_atoi, go_atoi_positive
from leaderworkerset.core.groups.state import has_replacement_gate, is_exhausted, is_leader_pod
from leaderworkerset.core.objects import (
    ControllerEvent,
    Obj,
    annotations_of,
    is_deleting,
    labels_of,
    metadata,
    name_of,
    revision_key_of,
    statefulset_partition,
    statefulset_replicas,
)

Counts = dict[str, int]

_TRUE = "true"


class RestartCountsError(ValueError):
    """The stored restart counts cannot be read (a reconcile error, like upstream's)."""


# --- the counts annotation -----------------------------------------------------------------------


def parse_restart_counts(raw: str) -> Counts:
    """Decode the annotation value; "" is an empty map. Worded like upstream's errors."""
    if raw == "":
        return {}
    try:
        decoded = json.loads(raw)
    except ValueError as err:
        raise RestartCountsError(f"invalid group restart counts: {err}") from err
    if not isinstance(decoded, dict):
        raise RestartCountsError("invalid group restart counts: expected a JSON object")
    counts: Counts = {}
    for key, value in decoded.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise RestartCountsError(f"invalid group restart count for group {key!r}: must be an integer")
        if value < 0:
            raise RestartCountsError(f"invalid group restart count for group {key!r}: must be non-negative")
        counts[str(key)] = value
    return counts


def encode_restart_counts(counts: Mapping[str, int]) -> str | None:
    """The annotation value (Go marshals map keys sorted, compact); None means "remove it"."""
    if not counts:
        return None
    return gojson.dumps(dict(counts)).decode("utf-8")


def restart_counts(lws: Obj) -> Counts:
    return parse_restart_counts(annotations_of(lws).get(c.ANNOTATION_GROUP_RESTART_COUNTS, ""))


def restart_count_key(leader: Obj) -> str:
    """`<leader's revision key>/<leader's group-index>`: per revision, per group."""
    return f"{revision_key_of(leader)}/{labels_of(leader).get(c.LABEL_GROUP_INDEX, '')}"


def max_group_restarts(lws: Obj) -> int | None:
    """The limit, or None when unbounded (the legacy behaviour)."""
    value = ((lws.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("maxGroupRestarts")
    return None if value is None else int(value)


def raise_count(counts: Counts, key: str, value: int) -> bool:
    """Set `key` to `value` unless it already holds as much: counts never go down here."""
    if counts.get(key, -1) >= value:
        return False
    counts[key] = value
    return True


def clear_count(counts: Counts, key: str) -> bool:
    return counts.pop(key, None) is not None


def prune_settled_counts(counts: Counts, revision_key: str, replicas: int) -> bool:
    """After a completed rollout (Ordinal): drop counts of other revisions and of group indexes a
    scale-down removed, so a group that comes back later starts with a fresh budget."""
    changed = False
    for key in list(counts):
        revision, _, group = key.partition("/")
        try:
            index = go_atoi(group)
        except GoParseError:
            index = -1
        if revision != revision_key or not 0 <= index < replicas:
            del counts[key]
            changed = True
    return changed


def counts_annotation_patch(counts: Mapping[str, int]) -> dict[str, str | None]:
    """The annotations entry to write back (None deletes the key in a merge patch)."""
    return {c.ANNOTATION_GROUP_RESTART_COUNTS: encode_restart_counts(counts)}


# --- the decision for one group failure -------------------------------------------------------------


class RestartBudgetStep(enum.Enum):
    CONSUME = "consume"  # write the count, then delete the leader (recreate the group)
    EXHAUST = "exhaust"  # the budget is spent: retain the group, stop recovering it


@dataclass(frozen=True)
class RestartBudgetDecision:
    step: RestartBudgetStep
    key: str
    count: int  # the value to write for CONSUME (already claimed when `claimed`)
    claimed: bool  # the leader already records this claim (a retry after a crash)


def leader_claim(leader: Obj) -> int | None:
    """The count this leader incarnation already claimed, if any (unreadable → none)."""
    raw = annotations_of(leader).get(ext.ANNOTATION_GROUP_RESTART_CLAIM)
    return None if raw is None else go_atoi_positive(raw)


def decide_restart_budget(counts: Mapping[str, int], leader: Obj, limit: int) -> RestartBudgetDecision:
    """Consume one restart or exhaust the group, from the *fresh* counts and leader."""
    key = restart_count_key(leader)
    claim = leader_claim(leader)
    if claim is not None:
        # Decided before a crash or a failed write: finish that, never count twice.
        return RestartBudgetDecision(RestartBudgetStep.CONSUME, key, claim, claimed=True)
    count = counts.get(key, 0)
    if count >= limit:
        return RestartBudgetDecision(RestartBudgetStep.EXHAUST, key, count, claimed=False)
    return RestartBudgetDecision(RestartBudgetStep.CONSUME, key, count + 1, claimed=False)


def claim_patch(leader: Obj, count: int) -> dict[str, Any]:
    """Merge patch recording the claim; the resourceVersion makes it conditional on a fresh read."""
    return {
        "metadata": {
            "resourceVersion": metadata(leader).get("resourceVersion"),
            "annotations": {ext.ANNOTATION_GROUP_RESTART_CLAIM: str(count)},
        }
    }


# --- pod state and patches ----------------------------------------------------------------------------


def recover_requested(pod: Obj) -> bool:
    """Only the exact value "true" asks for recovery; other values are ignored, as upstream."""
    return annotations_of(pod).get(c.ANNOTATION_RECOVER) == _TRUE


def holds_budget_finalizer(pod: Obj) -> bool:
    return c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP in (metadata(pod).get("finalizers") or [])


def _finalizers(pod: Obj) -> list[str]:
    return [str(f) for f in metadata(pod).get("finalizers") or []]


def exhaust_leader_patch(leader: Obj) -> dict[str, Any] | None:
    """Mark the leader exhausted and hold it; None when already done.

    A `recover` annotation set *before* exhaustion is dropped: recovery must be asked for after
    the user saw the group stop. The full finalizer list plus resourceVersion keeps other
    controllers' finalizers (e.g. foregroundDeletion) intact: a stale read conflicts.
    """
    exhausted = is_exhausted(leader)
    if exhausted and holds_budget_finalizer(leader):
        return None
    annotations: dict[str, str | None] = {c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: _TRUE}
    if not exhausted and c.ANNOTATION_RECOVER in annotations_of(leader):
        annotations[c.ANNOTATION_RECOVER] = None
    finalizers = _finalizers(leader)
    if c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP not in finalizers:
        finalizers.append(c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP)
    return {
        "metadata": {
            "resourceVersion": metadata(leader).get("resourceVersion"),
            "annotations": annotations,
            "finalizers": finalizers,
        }
    }


def hold_pod_patch(pod: Obj) -> dict[str, Any] | None:
    """Add the cleanup finalizer to a member of an exhausted group; None when not needed
    (already held, or already terminating: its object is on its way out anyway)."""
    if is_deleting(pod) or holds_budget_finalizer(pod):
        return None
    return {
        "metadata": {
            "resourceVersion": metadata(pod).get("resourceVersion"),
            "finalizers": [*_finalizers(pod), c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP],
        }
    }


def release_pod_patch(pod: Obj) -> dict[str, Any] | None:
    """Remove the cleanup finalizer (and the exhausted/recover marks); None when not held."""
    if not holds_budget_finalizer(pod):
        return None
    annotations = {
        key: None
        for key in (c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED, c.ANNOTATION_RECOVER)
        if key in annotations_of(pod)
    }
    meta: dict[str, Any] = {
        "resourceVersion": metadata(pod).get("resourceVersion"),
        "finalizers": [f for f in _finalizers(pod) if f != c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP],
    }
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta}


def group_members(leader: Obj, pods: Iterable[Obj]) -> list[Obj]:
    """Pods of the leader's group on the leader's revision, workers first, the leader last
    (releasing workers first lets foreground deletion finish before the leader is re-created)."""
    group, revision = labels_of(leader).get(c.LABEL_GROUP_INDEX), revision_key_of(leader)
    members = [
        p for p in pods if labels_of(p).get(c.LABEL_GROUP_INDEX) == group and revision_key_of(p) == revision
    ]
    return sorted(members, key=lambda p: (is_leader_pod(p), name_of(p)))


# --- an exhausted leader and teardown --------------------------------------------------


class ExhaustedStep(enum.Enum):
    RELEASE = "release"  # the group is being torn down: release its pods, keep no state
    RECOVER = "recover"  # the user asked: clear the count, release; the group is recreated fresh
    WAIT = "wait"  # retained: nothing to do until recover or teardown
    TERMINATE = "terminate"  # marked but not deleted yet (e.g. a crash mid-way): finish the job


def exhausted_leader_step(leader: Obj, *, teardown: bool) -> ExhaustedStep:
    if teardown:
        return ExhaustedStep.RELEASE
    if is_deleting(leader):
        return ExhaustedStep.RECOVER if recover_requested(leader) else ExhaustedStep.WAIT
    return ExhaustedStep.TERMINATE


def ordinal_teardown_requested(leader: Obj, leader_sts: Obj | None) -> bool:
    """Scale-down or rollout wants this retained group gone (Ordinal identity).

    Its index is beyond the leader StatefulSet's replicas (surge ordinals included), or the
    StatefulSet is rolling to another revision and the index is at or above the partition.
    Without a leader StatefulSet nothing is requested here (LWS deletion is handled earlier).
    Raises GoParseError for a non-integer group index.
    """
    if leader_sts is None:
        return False
    index = go_atoi(labels_of(leader).get(c.LABEL_GROUP_INDEX, ""))
    if index >= statefulset_replicas(leader_sts):
        return True
    desired = revision_key_of(leader_sts)
    if desired == "" or desired == revision_key_of(leader):
        return False
    return index >= statefulset_partition(leader_sts)


def budget_exceeded_event(leader: Obj) -> ControllerEvent:
    return ControllerEvent(
        c.EVENT_TYPE_WARNING,
        c.EVENT_REPLICA_RESTART_BUDGET_EXCEEDED,
        c.EVENT_ACTION_DELETE,
        c.MSG_RESTART_BUDGET_EXHAUSTED % labels_of(leader).get(c.LABEL_GROUP_INDEX, ""),
        ("Pod", name_of(leader)),
    )


# --- Hash identity: the budget follows the group across incarnations ---------------
#
# A recreated Hash group has a new key, so `<rev>/<key>` of the dead incarnation would never be
# read again. The replacement leader inherits it at admission (the highest unowned count of its
# revision), stale entries no live group can claim are pruned, and a completed rollout drops other
# revisions' counts.


def owned_count_keys(leader_pods: Iterable[Obj]) -> set[str]:
    """Keys still held by a group: its leader is alive, or retained after exhaustion."""
    return {restart_count_key(p) for p in leader_pods if not is_deleting(p) or is_exhausted(p)}


def _unowned_on_revision(counts: Mapping[str, int], revision: str, owned: set[str]) -> list[str]:
    prefix = f"{revision}/"
    return [k for k in counts if k.startswith(prefix) and k not in owned]


def claim_hash_count(counts: Counts, leader: Obj, leader_pods: Iterable[Obj]) -> bool:
    """Move the highest unowned count of the leader's revision (ties: smallest key) to the
    leader's own key, unless it already has one. True when the map changed."""
    revision = revision_key_of(leader)
    if not revision or not labels_of(leader).get(c.LABEL_GROUP_INDEX):
        return False
    target = restart_count_key(leader)
    if target in counts:
        return False
    unowned = _unowned_on_revision(counts, revision, owned_count_keys(leader_pods))
    if not unowned:
        return False
    best = min(unowned, key=lambda k: (-counts[k], k))
    counts[target] = counts.pop(best)
    return True


def prune_hash_counts(
    counts: Counts,
    revision: str,
    leader_pods: Sequence[Obj],
    *,
    replicas: int,
    surge: int,
) -> bool:
    """Drop current-revision counts no live group can claim any more: keep at most as many
    unowned entries as there are slots a replacement could still take (highest counts first)."""
    pods = list(leader_pods)
    owned = owned_count_keys(pods)
    on_revision = [p for p in pods if revision_key_of(p) == revision]
    exhausted = sum(1 for p in on_revision if is_exhausted(p))
    live = [p for p in on_revision if not is_exhausted(p) and not is_deleting(p)]
    waiting = sum(1 for p in live if has_replacement_gate(p))
    occupied = exhausted + len(live) - waiting
    pending = max(0, waiting - exhausted)
    slot_limit = max(replicas, min(replicas + surge, occupied + pending))
    keep = max(0, slot_limit - occupied)
    unowned = sorted(_unowned_on_revision(counts, revision, owned), key=lambda k: (-counts[k], k))
    for key in unowned[keep:]:
        del counts[key]
    return len(unowned) > keep


def prune_other_revisions(counts: Counts, revision: str) -> bool:
    """After a completed Hash rollout: counts of other revisions go."""
    stale = [k for k in counts if not k.startswith(f"{revision}/")]
    for key in stale:
        del counts[key]
    return bool(stale)


@dataclass(frozen=True)
class HashTeardown:
    release: bool
    clear_count: bool = False


def hash_teardown_requested(
    leader: Obj, *, desired_revision: str, replicas: int, leader_pods: Iterable[Obj]
) -> HashTeardown:
    """Whether a retained Hash group is being torn down: the Deployment moved to another
    revision, or more groups are retained on this revision than free slots (the later ones,
    by creation time then name, are released and their counts cleared)."""
    if desired_revision and desired_revision != revision_key_of(leader):
        return HashTeardown(release=True)
    revision = revision_key_of(leader)
    admitted = 0
    exhausted: list[Obj] = []
    for pod in leader_pods:
        if revision_key_of(pod) != revision:
            continue
        if is_exhausted(pod):
            exhausted.append(pod)
        elif not is_deleting(pod) and not has_replacement_gate(pod):
            admitted += 1
    exhausted.sort(key=lambda p: (str(metadata(p).get("creationTimestamp") or ""), name_of(p)))
    allowed = max(0, replicas - admitted)
    for position, pod in enumerate(exhausted):
        if name_of(pod) == name_of(leader):
            return HashTeardown(release=position >= allowed, clear_count=position >= allowed)
    return HashTeardown(release=replicas <= admitted)
