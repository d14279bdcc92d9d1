"""LeaderWorkerSet revisions: ControllerRevisions byte-compatible with upstream.

A revision stores the part of an LWS that defines its pods — ``spec.leaderWorkerTemplate`` and
``spec.networkConfig`` — as a strategic-merge patch that replaces both when applied. Its key (the
``template-revision-hash`` label on every group object) is the FNV-32 hash of the patch bytes, so
the bytes must be exactly the ones upstream's Go controller produces for the same object; otherwise
every group would be rolled when switching controllers. ``gonormalize`` gives the Go view of the
template and ``gojson`` the Go encoding.

A revision identifies the pods' template, not the live settings kept beside it in
``leaderWorkerTemplate``: ``maxGroupRestarts`` (the restart budget) and ``restartBackoff`` are left
out of the patch, so changing them rolls no group, and applying a revision keeps the live values
(v1.0, KEP-820, for the budget).

When bytes differ but meaning does not (a revision written by an older controller, e.g. with
``"creationTimestamp":null``), the stored patch is applied back to the LWS and re-rendered; equal
bytes then mean "same revision" and the answer is cached, as upstream does.

Everything takes and returns plain dicts as the API server serves them. A ControllerRevision built
here carries its patch as parsed JSON in ``data``; send it with ``gojson.dumps`` so the API server
stores exactly the bytes that were hashed.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat import gojson
from leaderworkerset.core.gocompat.gonormalize import normalize
from leaderworkerset.core.gocompat.strategicmerge import PATCH_DIRECTIVE, REPLACE, strategic_merge
from leaderworkerset.core.objects import (
    ControllerEvent,
    Obj,
    controller_owner,
    controller_reference,
    is_controlled_by,
    metadata,
    revision_key_of,
)

__all__ = [
    "LIVE_TEMPLATE_FIELDS",
    "REVISION_MATCH_CACHE_SIZE",
    "RevisionMatchCache",
    "RevisionPatchError",
    "RevisionPlan",
    "apply_revision",
    "find_revision",
    "fnv32",
    "hash_patch",
    "new_revision",
    "next_revision_number",
    "owned_revisions",
    "plan_revision",
    "revision_name",
    "revision_number",
    "revision_patch",
    "revision_spec",
    "revisions_to_truncate",
    "safe_encode",
    "set_matches_revision",
    "stored_patch",
    "with_live_settings",
    "without_live_settings",
]


REVISION_MATCH_CACHE_SIZE = 10_000
_NAME_PREFIX_MAX_BYTES = 220  # leaves room for "-<hash>-<number>" within 253
_CONTROLLER_REVISION_API_VERSION = "apps/v1"
_CONTROLLER_REVISION_KIND = "ControllerRevision"

# --------------------------------------------------------------------------------------------------
# key: FNV-32 of the patch, printed in decimal, through the "safe" alphabet
# --------------------------------------------------------------------------------------------------

_FNV32_OFFSET = 2166136261
_FNV32_PRIME = 16777619
# k8s.io/apimachinery/pkg/util/rand: an alphabet without vowels (no words) and without 0/1/3
# (no look-alikes); each character c of the input picks _SAFE_ALPHABET[ord(c) % 27].
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def fnv32(data: bytes) -> int:
    """FNV-1 (multiply, then xor) 32-bit — Go's ``hash/fnv.New32``, not ``New32a``."""
    value = _FNV32_OFFSET
    for byte in data:
        value = (value * _FNV32_PRIME) & 0xFFFFFFFF
        value ^= byte
    return value


def safe_encode(text: str) -> str:
    return "".join(_SAFE_ALPHABET[ord(char) % len(_SAFE_ALPHABET)] for char in text)


def hash_patch(patch: bytes) -> str:
    """The revision hash of patch bytes (upstream's ``hashRevision``)."""
    return safe_encode(str(fnv32(patch)))


# --------------------------------------------------------------------------------------------------
# the patch
# --------------------------------------------------------------------------------------------------


def _default_network_config() -> dict[str, Any]:
    # An LWS created before networkConfig existed has none until its webhook runs again; treating
    # that as Shared keeps its revision stable across the defaulting.
    return {"subdomainPolicy": c.SUBDOMAIN_SHARED}


# Fields of ``leaderWorkerTemplate`` that are live settings of the set rather than part of what its
# pods are built from: upstream v1.0 deletes them from the patch before hashing and ApplyRevision
# restores them from the live object (TestNewRevisionIgnoresMaxGroupRestarts,
# TestApplyRevisionPreservesMaxGroupRestarts). A changed budget therefore applies at the next failure
# and keeps every count, which are keyed by revision. ``restartBackoff`` (upstream main after v1.0,
# docs/failures.md) is such a setting too: a changed back-off applies to the next recreation and rolls
# no group. v1.0's Go types have no such field, so a controller swap hashes without it either way.
LIVE_TEMPLATE_FIELDS: tuple[str, ...] = ("maxGroupRestarts", "restartBackoff")


def without_live_settings(template: Mapping[str, Any]) -> dict[str, Any]:
    """A ``leaderWorkerTemplate`` less the fields that are no part of a revision."""
    return {key: value for key, value in template.items() if key not in LIVE_TEMPLATE_FIELDS}


def with_live_settings(restored: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """A ``leaderWorkerTemplate`` restored from a revision, with the live object's settings in place
    of whatever the revision held (an older revision of ours may still store a budget)."""
    template = without_live_settings(restored)
    template.update((key, live[key]) for key in LIVE_TEMPLATE_FIELDS if live.get(key) is not None)
    return template


def revision_patch(lws: Obj) -> bytes:
    """The revision data for an LWS: its templates and network config as Go renders them."""
    spec = lws.get("spec") or {}
    network_config = spec.get("networkConfig")
    if network_config is None:
        network_config = _default_network_config()
    template = without_live_settings(normalize(spec.get("leaderWorkerTemplate"), "LeaderWorkerTemplate"))
    network = normalize(network_config, "NetworkConfig")
    template[PATCH_DIRECTIVE] = REPLACE
    network[PATCH_DIRECTIVE] = REPLACE
    return gojson.dumps({"spec": {"leaderWorkerTemplate": template, "networkConfig": network}})


def stored_patch(revision: Obj) -> bytes:
    """The patch bytes of a ControllerRevision as read from the API server.

    ``data`` usually arrives parsed; upstream's revisions are compact Go JSON with sorted keys, so
    re-rendering with Go's rules gives back the bytes the API server holds. Raw text is kept as is.
    """
    data = revision.get("data")
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    return gojson.dumps(data)


# --------------------------------------------------------------------------------------------------
# ControllerRevision objects
# --------------------------------------------------------------------------------------------------


def revision_name(lws_name: str, hash_: str, number: int) -> str:
    """``<lws name, at most 220 bytes>-<hash>-<number>`` (at most 253 bytes overall)."""
    prefix = lws_name.encode("utf-8")[:_NAME_PREFIX_MAX_BYTES].decode("utf-8", errors="ignore")
    return f"{prefix}-{hash_}-{number}"


def _labels_match(obj: Obj, selector: Mapping[str, str]) -> bool:
    labels = metadata(obj).get("labels") or {}
    return all(labels.get(key) == value for key, value in selector.items())


def owned_revisions(
    lws: Obj, revisions: Iterable[Obj], selector: Mapping[str, str] | None = None
) -> list[Obj]:
    """Revisions of this LWS: labelled with its name (plus ``selector``), in its namespace, and
    controlled by it or by nobody (orphans are adopted, as in upstream's ``ListRevisions``)."""
    meta = metadata(lws)
    wanted = {c.LABEL_SET_NAME: str(meta.get("name", "")), **(selector or {})}
    namespace = meta.get("namespace", "")
    return [
        revision
        for revision in revisions
        if metadata(revision).get("namespace", "") == namespace
        and _labels_match(revision, wanted)
        and (controller_owner(revision) is None or is_controlled_by(revision, lws))
    ]


def revision_number(revision: Obj) -> int:
    """A ControllerRevision's ``revision`` number (0 when absent)."""
    return int(revision.get("revision") or 0)


def _highest(revisions: Sequence[Obj]) -> Obj | None:
    """The revision with the largest number; on ties the later one, like upstream's loop."""
    best: Obj | None = None
    for revision in revisions:
        if best is None or revision_number(best) <= revision_number(revision):
            best = revision
    return best


def next_revision_number(lws: Obj, revisions: Iterable[Obj]) -> int:
    highest = _highest(owned_revisions(lws, revisions))
    return 1 if highest is None else revision_number(highest) + 1


def new_revision(lws: Obj, key: str, revisions: Iterable[Obj]) -> dict[str, Any]:
    """A ControllerRevision for the LWS as it is now (upstream's ``NewRevision``).

    ``key`` forces the ``template-revision-hash`` label (A5: a revision re-created for an existing
    leader StatefulSet keeps the StatefulSet's key); the name always uses the computed hash.
    ``revisions`` are the ControllerRevisions known in the namespace (for the revision number).
    """
    return _revision_object(lws, key, revisions, revision_patch(lws))


def _revision_object(lws: Obj, key: str, revisions: Iterable[Obj], patch: bytes) -> dict[str, Any]:
    meta = metadata(lws)
    hash_ = hash_patch(patch)
    number = next_revision_number(lws, revisions)
    name = str(meta.get("name", ""))
    return {
        "apiVersion": _CONTROLLER_REVISION_API_VERSION,
        "kind": _CONTROLLER_REVISION_KIND,
        "metadata": {
            "name": revision_name(name, hash_, number),
            "namespace": meta.get("namespace", ""),
            "labels": {c.LABEL_SET_NAME: name, c.LABEL_TEMPLATE_REVISION_HASH: key or hash_},
            # Upstream copies the object's own kind; the API server always sets it.
            "ownerReferences": [controller_reference(lws, c.LWS_API_VERSION, lws.get("kind") or c.LWS_KIND)],
        },
        "data": gojson.loads(patch),
        "revision": number,
    }


def find_revision(lws: Obj, key: str, revisions: Iterable[Obj]) -> Obj | None:
    """The revision with this key (upstream's ``GetRevision``): none for an empty key; the highest
    numbered one if several carry the key."""
    if not key:
        return None
    return _highest(owned_revisions(lws, revisions, {c.LABEL_TEMPLATE_REVISION_HASH: key}))


def revisions_to_truncate(lws: Obj, key: str, revisions: Iterable[Obj]) -> list[Obj]:
    """After a completed rollout: every revision of this LWS whose key is not ``key``."""
    return [revision for revision in owned_revisions(lws, revisions) if revision_key_of(revision) != key]


# --------------------------------------------------------------------------------------------------
# applying a revision back, semantic equality
# --------------------------------------------------------------------------------------------------


class RevisionPatchError(ValueError):
    """A stored revision that cannot be applied (upstream's ApplyRevision would fail)."""


def _go_view(lws: Obj) -> dict[str, Any]:
    """The LWS as upstream's typed object encodes it, for the parts a revision touches."""
    spec = dict(lws.get("spec") or {})
    spec["leaderWorkerTemplate"] = normalize(spec.get("leaderWorkerTemplate"), "LeaderWorkerTemplate")
    if spec.get("networkConfig") is None:
        spec.pop("networkConfig", None)
    else:
        spec["networkConfig"] = normalize(spec["networkConfig"], "NetworkConfig")
    return {**copy.deepcopy(dict(lws)), "spec": spec}


def apply_revision(lws: Obj, revision: Obj) -> dict[str, Any]:
    """The LWS with the revision's templates restored (upstream's ``ApplyRevision``).

    Like upstream's typed result, the restored ``leaderWorkerTemplate`` and ``networkConfig`` are
    in Go's view (unknown fields dropped, zero values present, quantities canonical). The live
    settings (``LIVE_TEMPLATE_FIELDS``) are the LWS's own, whatever the revision stores.
    """
    patch = gojson.loads(stored_patch(revision))
    if not isinstance(patch, Mapping):
        raise RevisionPatchError("a revision patch must be a JSON object")
    view = _go_view(lws)
    restored = strategic_merge(view, patch)
    spec = restored.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise RevisionPatchError("spec must be an object")
    spec = dict(spec)
    # The live settings as stored: the Go view of v1.0's types would drop a newer one (restartBackoff).
    live = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    restored_template = normalize(spec.get("leaderWorkerTemplate"), "LeaderWorkerTemplate")
    spec["leaderWorkerTemplate"] = with_live_settings(restored_template, live)
    if spec.get("networkConfig") is not None:
        spec["networkConfig"] = normalize(spec["networkConfig"], "NetworkConfig")
    restored["spec"] = spec
    return restored


def revision_spec(lws: Obj, revision: Obj) -> dict[str, Any]:
    """``spec`` of the LWS with a (leader's) revision applied: what a group's objects are built from."""
    return dict(apply_revision(lws, revision)["spec"])


class RevisionMatchCache:
    """Remembers positive semantic matches, keyed by (LWS uid, generation, revision resourceVersion),
    least recently used evicted first (upstream: ``k8s.io/utils/lru`` with 10,000 entries)."""

    def __init__(self, max_entries: int = REVISION_MATCH_CACHE_SIZE) -> None:
        self._max_entries = max_entries
        self._entries: OrderedDict[tuple[str, int, str], None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: tuple[str, int, str]) -> bool:
        if key not in self._entries:
            return False
        self._entries.move_to_end(key)
        return True

    def add(self, key: tuple[str, int, str]) -> None:
        self._entries[key] = None
        self._entries.move_to_end(key)
        if len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)


def set_matches_revision(lws: Obj, proposed_patch: bytes, existing: Obj, cache: RevisionMatchCache) -> bool:
    """Whether ``existing`` means the same as the LWS's current patch even though its bytes differ
    (upstream's ``SetMatchesRevision``): apply it back, re-render, compare."""
    meta = metadata(lws)
    cache_key = (
        str(meta.get("uid", "")),
        int(meta.get("generation") or 0),
        str(metadata(existing).get("resourceVersion", "")),
    )
    if cache.get(cache_key):
        return True
    try:
        reconstructed = revision_patch(apply_revision(lws, existing))
    except ValueError:
        return False  # upstream: any error while applying means "no match"
    if reconstructed != proposed_patch:
        return False
    cache.add(cache_key)
    return True


# --------------------------------------------------------------------------------------------------
# the reconcile step
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RevisionPlan:
    """What the LWS reconciler does about revisions this round.

    ``create`` lists the ControllerRevisions to create, in order, each with the event to record
    once it exists; ``revision`` is the one the rest of the reconcile uses and ``key`` its label;
    ``updated`` says a new revision was made for a changed template (rolling update starts, A8 b).
    """

    revision: Obj
    key: str
    create: tuple[tuple[Obj, ControllerEvent], ...]
    updated: bool


def _creating_event(revision: Obj, message: str) -> ControllerEvent:
    return ControllerEvent(
        type=c.EVENT_TYPE_NORMAL,
        reason=c.EVENT_CREATING_REVISION,
        action=c.EVENT_ACTION_CREATE,
        message=message % revision_key_of(revision),
        related=(_CONTROLLER_REVISION_KIND, str(metadata(revision).get("name", ""))),
    )


def plan_revision(
    lws: Obj,
    leader_sts: Obj | None,
    revisions: Sequence[Obj],
    cache: RevisionMatchCache,
    proposed: bytes | None = None,
) -> RevisionPlan:
    """Find or create the current revision, then detect a template change.

    ``revisions`` are the ControllerRevisions in the LWS's namespace as the cache holds them;
    ``proposed`` is ``revision_patch(lws)`` when the caller already has it.

    Deviation: a revision of the proposed template that already exists is reused instead of a
    second one being created under the next number. Upstream looks revisions up only by the leader
    StatefulSet's key, so a reconcile interrupted after creating the revision and before the
    StatefulSet carries its key (a crash, a lost response) leaves a twin behind on the next one.
    """
    if proposed is None:
        proposed = revision_patch(lws)
    sts_key = revision_key_of(leader_sts) if leader_sts is not None else ""
    create: list[tuple[Obj, ControllerEvent]] = []
    found = find_revision(lws, sts_key, revisions)
    if found is None and not sts_key:
        found = find_revision(lws, hash_patch(proposed), revisions)
    if found is None:
        current: Obj = _revision_object(lws, sts_key, revisions, proposed)
        current_patch = proposed
        message = c.MSG_CREATING_REVISION_MISSING if sts_key else c.MSG_CREATING_REVISION_NEW
        create.append((current, _creating_event(current, message)))
    else:
        current, current_patch = found, stored_patch(found)
    updated = False
    # The template change is only looked for once the leader StatefulSet exists.
    if (
        leader_sts is not None
        and proposed != current_patch
        and not set_matches_revision(lws, proposed, current, cache)
    ):
        known = [*revisions, *(revision for revision, _ in create)]
        earlier = find_revision(lws, hash_patch(proposed), known)
        updated = True
        if earlier is not None:
            current = earlier
        else:
            current = _revision_object(lws, "", known, proposed)
            create.append((current, _creating_event(current, c.MSG_CREATING_REVISION_UPDATED)))
    return RevisionPlan(revision=current, key=revision_key_of(current), create=tuple(create), updated=updated)


# --------------------------------------------------------------------------------------------------
# DisaggregatedSet revision
# --------------------------------------------------------------------------------------------------
