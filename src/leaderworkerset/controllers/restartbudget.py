"""Writes of the group restart budget: the LWS counts annotation and pod patches.

The counts are read-modify-written on a *fresh* GET of the LWS, never on the cached copy, and the
PUT carries that read's resourceVersion: a concurrent writer makes it conflict, and the next
attempt starts from the newer object (client-go's retry.RetryOnConflict with DefaultRetry). A
stale cache can therefore never let a group restart past its limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.lifecycle.restartbudget import Counts, counts_annotation_patch, parse_restart_counts
from leaderworkerset.core.objects import MutableObj, annotations_of, name_of, namespace_of, uid_of
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import is_conflict, is_not_found
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS

Mutation = Callable[[Counts], bool]
PatchFor = Callable[[Mapping[str, Any]], Mapping[str, Any] | None]

# client-go retry.DefaultRetry: 5 attempts, 10 ms apart (jitter left out: one process, few writers).
CONFLICT_RETRIES = 5
CONFLICT_BACKOFF_SECONDS = 0.01


# Given the stored annotations, the ones to set (a None value removes it), or None to write nothing.
AnnotationsUpdate = Callable[[Mapping[str, str]], Mapping[str, str | None] | None]


async def mutate_lws_annotations(
    client: KubeClient, namespace: str, name: str, update: AnnotationsUpdate
) -> MutableObj | None:
    """Write `update` of the annotations of a *fresh* read of the LWS, guarded by that read's
    resourceVersion (a conflict reads again and recomputes); the written LWS, or None when there is
    nothing to write or no such LWS. Used for every annotation the controllers keep on the LWS."""
    for attempt in range(CONFLICT_RETRIES):
        latest = await client.get_or_none(LEADERWORKERSETS, namespace, name)
        if latest is None:
            return None
        changes = update(annotations_of(latest))
        if changes is None:
            return None
        meta = dict(latest.get("metadata") or {})
        annotations = {**annotations_of(latest), **changes}
        meta["annotations"] = {k: v for k, v in annotations.items() if v is not None}
        try:
            written: MutableObj = await client.update(LEADERWORKERSETS, {**latest, "metadata": meta})
            return written
        except Exception as err:
            if not is_conflict(err) or attempt == CONFLICT_RETRIES - 1:
                raise
        await asyncio.sleep(CONFLICT_BACKOFF_SECONDS)
    return None  # pragma: no cover - the loop either returns or raises


async def mutate_restart_counts(client: KubeClient, namespace: str, name: str, mutate: Mutation) -> bool:
    """Apply `mutate` (True when it changed the map) to the stored counts; True when written.

    A missing LWS is nothing to count on (False). An empty map removes the annotation.
    """

    def update(annotations: Mapping[str, str]) -> Mapping[str, str | None] | None:
        counts = parse_restart_counts(annotations.get(c.ANNOTATION_GROUP_RESTART_COUNTS, ""))
        return counts_annotation_patch(counts) if mutate(counts) else None

    return await mutate_lws_annotations(client, namespace, name, update) is not None


async def patch_pod(client: KubeClient, pod: Mapping[str, Any], patch_for: PatchFor) -> MutableObj | None:
    """Merge-patch a pod with `patch_for(pod)` (which carries the pod's resourceVersion).

    On a conflict the pod is read again and the patch recomputed, so a finalizer list is never
    written from a stale copy. Returns the patched pod, or None when no patch was needed or the
    pod is gone (or replaced by a same-name pod, which is not ours to touch).
    """
    namespace, name = namespace_of(pod), name_of(pod)
    current: Mapping[str, Any] = pod
    for attempt in range(CONFLICT_RETRIES):
        patch = patch_for(current)
        if patch is None:
            return None
        try:
            patched: MutableObj = await client.merge_patch(PODS, namespace, name, patch)
            return patched
        except Exception as err:
            if is_not_found(err):
                return None
            if not is_conflict(err) or attempt == CONFLICT_RETRIES - 1:
                raise
        fresh = await client.get_or_none(PODS, namespace, name)
        if fresh is None or uid_of(fresh) != uid_of(pod):
            return None
        current = fresh
    return None  # pragma: no cover
