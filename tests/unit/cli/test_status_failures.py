# ruff: noqa: E501 -- the snapshot is a 140-column table, line for line
"""`lws status NAME --failures`: the ledger table at a fixed width, its `-o json` document, and the
back-off note on the group tree."""

from __future__ import annotations

import datetime
import io
import json
from typing import Any

from rich.console import Console

from leaderworkerset.cli.status import as_text
from leaderworkerset.cli.views import failures
from leaderworkerset.cli.views.lws import Snapshot, document, render
from leaderworkerset.core.lifecycle.backoff import GroupBackoff
from leaderworkerset.core.lifecycle.ledger import (
    Action,
    Cause,
    Trigger,
    encode_backoff,
    encode_entries,
    entry_for,
)
from tests.support.builders import cached_lws, leader_pod, worker_statefulset

T0 = datetime.datetime(2026, 12, 1, 13, 0, 0, tzinfo=datetime.UTC)
NOW = T0.timestamp() + 30


def _configmap() -> dict[str, Any]:
    crash = Trigger(Cause.EXIT_CODE, "lws-0-1", "worker", 137, "kwok-node-1", "Error")
    entries = [
        entry_for(crash, group="0", action=Action.RECREATED, when=T0, leader_uid="u1"),
        entry_for(crash, group="0", action=Action.RECREATED, when=T0 + datetime.timedelta(seconds=10),
                  leader_uid="u2", delay_seconds=10),
        entry_for(Trigger(Cause.OOM_KILLED, "lws-0", "leader", 137, "kwok-node-0", "OOMKilled"), group="0",
                  action=Action.BACKING_OFF, when=T0 + datetime.timedelta(seconds=25), leader_uid="u3",
                  delay_seconds=20),
    ]  # fmt: skip
    backoff = {"0": GroupBackoff(2, T0.timestamp() + 10, "u2", T0.timestamp() + 30 + 12.5).to_json()}
    return {"data": {"entries": encode_entries(entries), "backoff": encode_backoff(backoff)}}


def _text(view: Any, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), force_terminal=True, color_system=None)
    return "".join(line.rstrip() + "\n" for line in as_text(console, view).splitlines())


def test_the_ledger_table_newest_first_at_a_fixed_width() -> None:
    assert _text(failures.table("default", "lws", _configmap()), 140) == (
        "Failure ledger of LeaderWorkerSet default/lws: 3 entries\n"
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━━┓\n"
        "┃ time                     ┃ group ┃ action              ┃ cause      ┃ exit ┃ pod     ┃ container ┃ node        ┃ detail    ┃\n"
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━━┩\n"
        "│ 2026-12-01T13:00:25.000Z │ 0     │ backing off 20s     │ oom-killed │ 137  │ lws-0   │ leader    │ kwok-node-0 │ OOMKilled │\n"
        "│ 2026-12-01T13:00:10.000Z │ 0     │ recreated after 10s │ exit-code  │ 137  │ lws-0-1 │ worker    │ kwok-node-1 │ Error     │\n"
        "│ 2026-12-01T13:00:00.000Z │ 0     │ recreated           │ exit-code  │ 137  │ lws-0-1 │ worker    │ kwok-node-1 │ Error     │\n"
        "└──────────────────────────┴───────┴─────────────────────┴────────────┴──────┴─────────┴───────────┴─────────────┴───────────┘\n"
    )  # fmt: skip


def test_an_lws_without_a_ledger_shows_an_empty_table() -> None:
    assert _text(failures.table("default", "lws", None), 100).startswith(
        "Failure ledger of LeaderWorkerSet default/lws: 0 entries\n"
    )


def test_the_json_document_lists_entries_and_backoff_state() -> None:
    doc = failures.document("default", "lws", _configmap(), NOW)
    assert json.loads(json.dumps(doc)) == doc
    assert [(e["action"], e["cause"], e.get("exitCode"), e.get("delaySeconds")) for e in doc["failures"]] == [
        ("recreated", "exit-code", 137, None),
        ("recreated", "exit-code", 137, 10.0),
        ("backing-off", "oom-killed", 137, 20.0),
    ]
    assert doc["backoff"] == {"0": {"streak": 2, "waiting": True, "nextRecreationInSeconds": 12.5}}


def _snapshot(ledger: dict[str, Any] | None, now: float) -> Snapshot:
    lws = cached_lws("lws").replicas(1).size(2).obj()
    leader = leader_pod("lws", 0, "rev", ready=False)
    leader["spec"]["nodeName"] = "kwok-node-0"
    leader_sts = {
        "metadata": {"name": "lws", "labels": {"leaderworkerset.sigs.k8s.io/template-revision-hash": "rev"}}
    }
    return Snapshot(
        lws, [leader], [leader_sts, worker_statefulset(leader, ready=False)], ledger=ledger, now=now
    )


def test_the_tree_says_when_a_backing_off_group_is_recreated_next() -> None:
    text = _text(render(_snapshot(_configmap(), NOW)), 200)
    assert "group 0  lws-0  rev rev  not ready" in text
    assert "(backing off, next recreation in 13s)" in text
    assert (
        document(_snapshot(_configmap(), NOW))["groups"][0]["backoff"]
        == "backing off, next recreation in 13s"
    )


def test_no_note_once_the_wait_is_over_or_without_a_ledger() -> None:
    assert "backing off" not in _text(render(_snapshot(_configmap(), NOW + 60)), 200)
    assert "backing off" not in _text(render(_snapshot(None, NOW)), 200)
    assert document(_snapshot(None, NOW))["groups"][0]["backoff"] is None


def test_the_ledger_names_the_back_off_in_force_and_its_source() -> None:
    both = (
        cached_lws("lws").restart_backoff(10, 60).annotation("leaderworkerset.dev/restart-backoff", "base=1s")
    )
    configmap = _configmap()
    configmap["data"]["backoff"] = encode_backoff(
        {"0": GroupBackoff(2, T0.timestamp(), "u2", source="field").to_json()}
    )
    doc = failures.document("default", "lws", configmap, NOW, both.obj())
    assert doc["restartBackoff"] == {
        "source": "field",
        "overriddenAnnotation": True,
        "baseSeconds": 10.0,
        "capSeconds": 60.0,
        "resetSeconds": 120.0,
    }
    assert doc["backoff"]["0"]["source"] == "field"
    text = _text(failures.table("default", "lws", configmap, both.obj()), 200)
    assert (
        "restart back-off from spec.leaderWorkerTemplate.restartBackoff: base 10s, cap 1m, reset 2m" in text
    )
    assert "annotation leaderworkerset.dev/restart-backoff is overridden" in text
    assert "restartBackoff" not in failures.document(
        "default", "lws", configmap, NOW, cached_lws("lws").obj()
    )
