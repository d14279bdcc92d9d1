"""Placement policy affinity."""

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated.placement import with_placement

TOPO = "topology.kubernetes.io/zone"
NAME, SLICE = c.LABEL_DS_NAME, c.LABEL_DS_SLICE


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def term(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": TOPO}


TOGETHER_1 = term(req(NAME, "In", "ds"), req(SLICE, "In", "1"))
APART_1 = term(req(NAME, "In", "ds"), req(SLICE, "NotIn", "1"))
APART_0 = term(req(NAME, "In", "ds"), req(SLICE, "Exists"), req(SLICE, "NotIn", "0"))
OTHER_SETS = term(req(NAME, "Exists"), req(NAME, "NotIn", "ds"), req(SLICE, "Exists"))


@pytest.mark.parametrize(
    ("policy", "slice_index", "want_affinity", "want_anti"),
    [
        pytest.param(None, 0, None, None, id="no policy"),
        pytest.param({"type": c.PLACEMENT_NONE, "topology": TOPO}, 0, None, None, id="None"),
        pytest.param({"type": c.PLACEMENT_EXCLUSIVE_SLICE, "topology": ""}, 0, None, None, id="no topology"),
        pytest.param(
            {"type": c.PLACEMENT_EXCLUSIVE_SLICE, "topology": TOPO},
            1,
            [TOGETHER_1],
            [APART_1],
            id="ExclusiveSlice",
        ),
        pytest.param(
            {"type": c.PLACEMENT_EXCLUSIVE_SLICE, "topology": TOPO},
            0,
            [term(req(NAME, "In", "ds"), req(SLICE, "In", "0"))],
            [APART_0],
            id="slice 0 does not repel label-less pods",
        ),
        pytest.param(
            {"type": c.PLACEMENT_EXCLUSIVE_TOPOLOGY, "topology": TOPO},
            1,
            [TOGETHER_1],
            [APART_1, OTHER_SETS],
            id="ExclusiveTopology repels other sets' slices",
        ),
    ],
)
def test_placement_terms(
    policy: dict[str, str] | None,
    slice_index: int,
    want_affinity: list[Any] | None,
    want_anti: list[Any] | None,
) -> None:
    got = with_placement({"containers": []}, "ds", slice_index, policy)
    affinity = got.get("affinity")
    if want_affinity is None:
        assert affinity is None
        return
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    assert affinity["podAffinity"][required] == want_affinity
    assert affinity["podAntiAffinity"][required] == want_anti


def test_user_terms_are_kept_and_the_input_is_not_mutated() -> None:
    user_term = term(req("app", "In", "x"))
    pod_spec = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [user_term]}}}
    got = with_placement(pod_spec, "ds", 1, {"type": c.PLACEMENT_EXCLUSIVE_SLICE, "topology": TOPO})
    assert got["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
        user_term,
        TOGETHER_1,
    ]
    assert pod_spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
        user_term
    ]
