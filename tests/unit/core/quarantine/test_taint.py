"""Node quarantine's taint mode: the annotation, the node patches (ours only), which nodes to taint
and untaint, the outcomes kept in the state, and the refusal condition."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.desired.statuswrite import annotation_status
from leaderworkerset.core.quarantine.decision import Quarantine, decode_state, encode_state
from leaderworkerset.core.quarantine.policy import mode_problem, quarantine_taints
from leaderworkerset.core.quarantine.taint import (
    REFUSED,
    TAINTED,
    refusal_message,
    taint_patch,
    tainted_elsewhere,
    to_taint,
    to_untaint,
    untaint_patch,
    with_outcomes,
)
from tests.support.builders import NodeBuilder, cached_lws

Obj = dict[str, Any]
AFTER, MODE = ext.ANNOTATION_QUARANTINE_AFTER, ext.ANNOTATION_QUARANTINE_MODE
OURS = {"key": ext.TAINT_QUARANTINED, "effect": "NoSchedule"}
THEIRS = {"key": "example.com/maintenance", "effect": "NoSchedule"}
FAR = "2099-01-01T00:00:00.000Z"
PAST = "2000-01-01T00:00:00.000Z"


def _set(mode: str | None = "Taint", state: list[Quarantine] | None = None, name: str = "web") -> Obj:
    annotations = {AFTER: "2/10m"}
    if mode is not None:
        annotations[MODE] = mode
    if state:
        annotations[ext.ANNOTATION_QUARANTINED_NODES] = encode_state(state) or ""
    return cached_lws(name).annotations(annotations).obj()


def _node(*taints: dict[str, str]) -> Obj:
    node = NodeBuilder("n1").obj()
    node["metadata"]["resourceVersion"] = "7"
    if taints:
        node["spec"] = {"taints": [dict(t) for t in taints]}
    return node


MODE_CASES = [
    pytest.param({AFTER: "2/10m", MODE: "Taint"}, None, id="Taint"),
    pytest.param({AFTER: "2/10m", MODE: "Affinity"}, None, id="Affinity (the default, spelled out)"),
    pytest.param({AFTER: "2/10m", MODE: "taint"}, "must be Affinity or Taint", id="case matters"),
    pytest.param({MODE: "Taint"}, f"takes effect only with {AFTER}", id="alone"),
]


@pytest.mark.parametrize(("annotations", "want"), MODE_CASES)
def test_the_mode_annotation(annotations: dict[str, str], want: str | None) -> None:
    assert mode_problem(annotations[MODE], cached_lws().annotations(annotations).obj()) == want


def test_every_mode_case_ran() -> None:
    assert len(MODE_CASES) == 4


def test_only_a_valid_taint_mode_asks_for_taints() -> None:
    assert quarantine_taints(_set("Taint"))
    assert not quarantine_taints(_set("Affinity"))
    assert not quarantine_taints(_set(None))
    assert not quarantine_taints(cached_lws().annotations({MODE: "Taint"}).obj())


PATCH_CASES = [
    pytest.param(
        taint_patch,
        _node(),
        [{"op": "add", "path": "/spec/taints", "value": [OURS]}],
        id="taint a node without taints",
    ),
    pytest.param(
        taint_patch,
        _node(THEIRS),
        [{"op": "replace", "path": "/spec/taints", "value": [THEIRS, OURS]}],
        id="taint next to someone else's",
    ),
    pytest.param(taint_patch, _node(OURS), None, id="already tainted: no patch"),
    pytest.param(
        untaint_patch,
        _node(THEIRS, OURS),
        [{"op": "replace", "path": "/spec/taints", "value": [THEIRS]}],
        id="untaint keeps someone else's taint",
    ),
    pytest.param(
        untaint_patch, _node(OURS), [{"op": "remove", "path": "/spec/taints"}], id="untaint the last"
    ),
    pytest.param(untaint_patch, _node(THEIRS), None, id="never someone else's taint"),
    pytest.param(
        untaint_patch,
        _node({**OURS, "effect": "NoExecute"}),
        None,
        id="our key with another effect is not ours",
    ),
]


@pytest.mark.parametrize(("patch_of", "node", "want"), PATCH_CASES)
def test_node_patches(patch_of: Any, node: Obj, want: list[Obj] | None) -> None:
    patch = patch_of(node)
    if want is None:
        assert patch is None
        return
    assert patch[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    assert patch[1:] == want


def test_every_patch_case_ran() -> None:
    assert len(PATCH_CASES) == 7


def test_which_nodes_are_tainted_and_untainted() -> None:
    state = [
        Quarantine("a", PAST, FAR),
        Quarantine("b", PAST, FAR, taint=TAINTED),
        Quarantine("c", PAST, FAR, taint=REFUSED),
    ]
    assert to_taint(_set("Taint"), state) == ["a"], "each node is tried once"
    assert to_taint(_set("Affinity"), state) == []
    released = [
        Quarantine("b", PAST, PAST, taint=TAINTED),
        Quarantine("c", PAST, PAST, taint=REFUSED),
        Quarantine("d", PAST, PAST, taint=TAINTED),
    ]
    assert to_untaint(released, frozenset({"d"})) == ["b"], "only nodes we tainted, and no other set holds"
    other = _set(
        state=[Quarantine("d", PAST, FAR, taint=TAINTED), Quarantine("e", PAST, PAST, taint=TAINTED)],
        name="other",
    )
    this = _set(state=[Quarantine("b", PAST, FAR, taint=TAINTED)])
    now = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
    assert tainted_elsewhere([other, this], ("default", "web"), now) == frozenset({"d"})
    recorded = with_outcomes(state, {"a": TAINTED})
    assert [q.taint for q in recorded] == [TAINTED, TAINTED, REFUSED]
    assert decode_state(encode_state(recorded)) == recorded, "the outcome survives a restart"


def test_a_refusal_is_a_condition_and_an_event_until_the_node_is_released() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    refused = _set(state=[Quarantine("n1", PAST, FAR, taint=REFUSED)])
    message = refusal_message(refused)
    assert message is not None
    assert message.startswith("Node(s) n1 not tainted: the manager may not patch nodes")
    flagged = annotation_status(refused, now)
    assert flagged is not None
    status, events = flagged
    [condition] = [
        cond for cond in status["conditions"] if cond["type"] == ext.CONDITION_QUARANTINE_TAINT_REFUSED
    ]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        c.CONDITION_TRUE,
        ext.REASON_NODE_PATCH_FORBIDDEN,
        message,
    )
    assert [(e.type, e.reason) for e in events] == [
        (c.EVENT_TYPE_WARNING, ext.EVENT_QUARANTINE_TAINT_REFUSED)
    ]
    released = _set()
    cleared = annotation_status({**released, "status": status}, now)
    assert cleared is not None
    assert cleared[0].get("conditions") is None
    assert annotation_status(_set("Affinity", [Quarantine("n1", PAST, FAR)]), now) is None, (
        "affinity mode: no condition"
    )
