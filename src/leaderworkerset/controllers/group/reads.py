"""Cache reads the pod controller's collaborators share."""

from __future__ import annotations

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.core.objects import MutableObj, is_deleting, labels_of, namespace_of
from leaderworkerset.runtime.objects import ObjectKey


def set_of(informers: SharedInformers, pod: MutableObj) -> MutableObj | None:
    """The pod's LWS from the cache (deleting and Hash ones included)."""
    return informers.lws.store.get(ObjectKey(namespace_of(pod), labels_of(pod)[c.LABEL_SET_NAME]))


def lws_of(informers: SharedInformers, pod: MutableObj) -> MutableObj | None:
    """The LWS whose restart policy applies: present and not deleting."""
    lws = set_of(informers, pod)
    return None if lws is None or is_deleting(lws) else lws


def group_pods_of(informers: SharedInformers, leader: MutableObj) -> list[MutableObj]:
    """The cached pods labelled with the leader's set and group index."""
    labels = labels_of(leader)
    return informers.group_pods(
        namespace_of(leader), labels.get(c.LABEL_SET_NAME, ""), labels.get(c.LABEL_GROUP_INDEX, "")
    )
