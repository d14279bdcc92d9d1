"""Group and subgroup keys, and the ordinal suffix of StatefulSet pod names.

Both keys are 40-character lowercase SHA-1 hex digests. They end up in labels, affinity terms and
the pod controller's lookups, so the exact input strings matter: `<namespace>/<leaderPodName>` for
an Ordinal group key and `<leader name or group key>/<subgroup index>` for a subgroup key.

"""

from __future__ import annotations

import hashlib
import re

# StatefulSet pods are named `<parent>-<ordinal>`; the greedy parent keeps names that contain dashes.
_ORDINAL_SUFFIX = re.compile(r"(.*)-([0-9]+)\Z")


# Ordinals are parsed as 32-bit signed integers, as the StatefulSet controller does.
_MAX_ORDINAL = 2**31 - 1


# How much of a Hash group key goes into DNS-facing names (leader hostname, per-replica Service):
# 8 hex characters, the width Deployments use for their pod-template hash.
HASH_DNS_PREFIX_LENGTH = 8


NO_ORDINAL = -1


def sha1_hex(text: str) -> str:
    """The 40-character lowercase hex SHA-1 of the UTF-8 bytes of `text`."""
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def group_key(namespace: str, leader_pod_name: str) -> str:
    """Key shared by every pod of an Ordinal group (label `group-key`)."""
    return sha1_hex(f"{namespace}/{leader_pod_name}")


def hash_group_key(namespace: str, token: str) -> str:
    """Key of a Hash group: the leader's name is unknown at admission, so a random token stands in."""
    return sha1_hex(f"{namespace}/{token}")


def subgroup_key(group_anchor: str, subgroup_index: int | str) -> str:
    """Key shared by the members of one subgroup.

    `group_anchor` is the leader pod name (Ordinal) or the group key (Hash); no namespace is mixed in.
    """
    return sha1_hex(f"{group_anchor}/{subgroup_index}")


def hash_leader_hostname(lws_name: str, key: str) -> str:
    """Hostname of a Hash-identity leader: `<lws>-<first 8 characters of the group key>`."""
    return f"{lws_name}-{key[:HASH_DNS_PREFIX_LENGTH]}"


def parent_name_and_ordinal(pod_name: str) -> tuple[str, int]:
    """Split `<parent>-<ordinal>`; ("", -1) when the name has no numeric suffix.

    An ordinal that does not fit in int32 yields (parent, -1), as upstream's 32-bit parse does.
    """
    match = _ORDINAL_SUFFIX.search(pod_name)
    if match is None:
        return "", NO_ORDINAL
    ordinal = int(match.group(2))
    if ordinal > _MAX_ORDINAL:
        return match.group(1), NO_ORDINAL
    return match.group(1), ordinal
