"""Exclusive placement affinity terms.

A pod that must own its topology domain gets two required terms with the same topologyKey: a
podAffinity term that pulls it to pods carrying the same key, and a podAntiAffinity term that keeps
pods of any other key out. Terms the user wrote stay first; ours are appended.
"""

from collections.abc import Collection

from leaderworkerset.core.objects import MutableObj

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _required_terms(affinity: MutableObj, kind: str) -> list[MutableObj]:
    return list((affinity.get(kind) or {}).get(_REQUIRED) or [])


def exclusive_affinity_applied(pod_spec: MutableObj, topology_key: str) -> bool:
    """Both a required affinity and a required anti-affinity term already use `topology_key`.

    Only the topologyKey is compared (not the selector): that is upstream's idempotency test, so a
    user term on the same key suppresses ours.
    """
    affinity = pod_spec.get("affinity") or {}
    if not affinity.get("podAffinity") or not affinity.get("podAntiAffinity"):
        return False
    has_affinity = any(t.get("topologyKey") == topology_key for t in _required_terms(affinity, "podAffinity"))
    has_anti = any(t.get("topologyKey") == topology_key for t in _required_terms(affinity, "podAntiAffinity"))
    return has_affinity and has_anti


def exclusive_affinity_terms(label_key: str, key: str, topology_key: str) -> tuple[MutableObj, MutableObj]:
    """The (affinity, anti-affinity) pair that makes pods with label `label_key=key` own a domain."""
    affinity_term = {
        "labelSelector": {"matchExpressions": [{"key": label_key, "operator": "In", "values": [key]}]},
        "topologyKey": topology_key,
    }
    anti_affinity_term = {
        "labelSelector": {
            "matchExpressions": [
                {"key": label_key, "operator": "Exists"},
                {"key": label_key, "operator": "NotIn", "values": [key]},
            ]
        },
        "topologyKey": topology_key,
    }
    return affinity_term, anti_affinity_term


def set_exclusive_affinities(pod_spec: MutableObj, key: str, topology_key: str, label_key: str) -> None:
    """Append the exclusive pair to `pod_spec` in place, unless already applied for the topology key."""
    if exclusive_affinity_applied(pod_spec, topology_key):
        return
    affinity_term, anti_affinity_term = exclusive_affinity_terms(label_key, key, topology_key)
    affinity = pod_spec.get("affinity") or {}
    pod_spec["affinity"] = affinity
    for kind, term in (("podAffinity", affinity_term), ("podAntiAffinity", anti_affinity_term)):
        section = affinity.get(kind) or {}
        affinity[kind] = section
        section[_REQUIRED] = [*(section.get(_REQUIRED) or []), term]


# Node quarantine (core/quarantine/): a node is named by the ledger as `spec.nodeName`, so it is
# avoided by its name (`matchFields` on `metadata.name`), not by the hostname label, which on some
# clouds differs from the node's name.
NODE_NAME_FIELD = "metadata.name"


def avoid_nodes(pod_spec: MutableObj, nodes: Collection[str]) -> None:
    """Keep the pod off `nodes`: a required `NotIn` on the node's name, added to every required
    node-selector term (the terms are ORed, so each must exclude them), or as the only term. A term
    that already excludes exactly these nodes is not repeated (a reinvoked webhook)."""
    if not nodes:
        return
    requirement = {"key": NODE_NAME_FIELD, "operator": "NotIn", "values": sorted(nodes)}
    affinity = pod_spec.get("affinity") or {}
    pod_spec["affinity"] = affinity
    node_affinity = affinity.get("nodeAffinity") or {}
    affinity["nodeAffinity"] = node_affinity
    selector = node_affinity.get(_REQUIRED) or {}
    node_affinity[_REQUIRED] = selector
    terms = list(selector.get("nodeSelectorTerms") or []) or [{}]
    for term in terms:
        fields = list(term.get("matchFields") or [])
        if requirement not in fields:
            term["matchFields"] = [*fields, requirement]
    selector["nodeSelectorTerms"] = terms
