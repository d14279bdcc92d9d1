"""`lws status` lists a set's quarantined nodes with their evidence (tree and JSON); a set without a
quarantine shows nothing of it."""

from __future__ import annotations

import datetime

from rich.console import Console

from leaderworkerset.api import extensions as ext
from leaderworkerset.cli.views.lws import Snapshot, document, render
from leaderworkerset.core.quarantine.decision import Evidence, Quarantine, encode_state
from tests.support.builders import cached_lws

NOW = datetime.datetime(2026, 12, 4, 4, 0, tzinfo=datetime.UTC).timestamp()
EVIDENCE = (
    Evidence("2026-12-04T03:58:00.000Z", "0", "vllm-0-1", "exit-code"),
    Evidence("2026-12-04T03:59:00.000Z", "0", "vllm-0", "oom-killed"),
)


def _snapshot(quarantined: bool, taint: str = "") -> Snapshot:
    lws = cached_lws("vllm").replicas(1).size(2).obj()
    if quarantined:
        state = encode_state(
            [
                Quarantine(
                    "kwok-node-3", "2026-12-04T03:59:00.100Z", "2026-12-04T04:09:00.100Z", EVIDENCE, taint
                )
            ]
        )
        assert state is not None
        lws["metadata"]["annotations"] = {ext.ANNOTATION_QUARANTINED_NODES: state}
    return Snapshot(lws, [], [], now=NOW)


def _text(snapshot: Snapshot) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(render(snapshot))
    return console.export_text()


def test_the_tree_lists_each_quarantined_node_with_its_failures() -> None:
    text = _text(_snapshot(quarantined=True))
    assert "quarantined nodes: 1 (new pods of this set avoid them)" in text
    assert (
        "kwok-node-3 until 2026-12-04T04:09:00.100Z (in 540s), 2 failures since 2026-12-04T03:59:00.100Z"
        in text
    )
    assert "2026-12-04T03:58:00.000Z group 0 pod vllm-0-1 exit-code" in text
    assert "2026-12-04T03:59:00.000Z group 0 pod vllm-0 oom-killed" in text


def test_the_json_document_carries_the_evidence_and_the_time_left() -> None:
    (node,) = document(_snapshot(quarantined=True))["quarantinedNodes"]
    assert node["node"] == "kwok-node-3"
    assert node["releaseInSeconds"] == 540
    assert [f["pod"] for f in node["failures"]] == ["vllm-0-1", "vllm-0"]


def test_taint_mode_says_what_became_of_the_taint() -> None:
    assert "tainted" not in _text(_snapshot(quarantined=True))
    assert "2026-12-04T03:59:00.100Z, tainted NoSchedule" in _text(
        _snapshot(quarantined=True, taint="tainted")
    )
    refused = _text(_snapshot(quarantined=True, taint="refused"))
    assert "taint refused (no node patch permission)" in refused
    (node,) = document(_snapshot(quarantined=True, taint="tainted"))["quarantinedNodes"]
    assert node["taint"] == "tainted"


def test_a_set_without_a_quarantine_shows_nothing_of_it() -> None:
    assert "quarantined" not in _text(_snapshot(quarantined=False))
    assert "quarantinedNodes" not in document(_snapshot(quarantined=False))
