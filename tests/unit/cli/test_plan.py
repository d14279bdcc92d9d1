"""`lws plan` output: the rich table at a fixed width (snapshots) and the JSON document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from leaderworkerset.cli import app as cli_app
from leaderworkerset.cli.plan import PlanInputError, load_manifest, render, to_json
from leaderworkerset.core.plan import Plan
from tests.unit.core.test_plan import GPU, LIVE_DS, NEW_IMAGE, ds, ds_plan, gpu_lws, gpu_role, lws_plan

WIDTH = 100


def rendered(plan: Plan) -> str:
    console = Console(width=WIDTH, record=True, color_system=None)
    console.print(render(plan))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())


ROLLOUT = """\
LeaderWorkerSet default/plan  rollout  rolling update of 4 groups: maxSurge 1, maxUnavailable 0,
partition 0
┏━━━━━━┳━━━━━━┳━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┳━━━━━━━┓
┃ step ┃ down ┃ up ┃ updated/old ┃ ready capacity ┃ extra accelerators ┃ ETA   ┃
┡━━━━━━╇━━━━━━╇━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━┩
│ 1    │ -    │ 4  │ 1/4         │ groups 100%    │ 2 nvidia.com/gpu   │ 42s   │
│ 2    │ 3    │ 3  │ 2/3         │ groups 100%    │ 2 nvidia.com/gpu   │ 1m24s │
│ 3    │ 2    │ 2  │ 3/2         │ groups 100%    │ 2 nvidia.com/gpu   │ 2m06s │
│ 4    │ 1    │ 1  │ 4/1         │ groups 100%    │ 2 nvidia.com/gpu   │ 2m48s │
│ 5    │ 0    │ 0  │ 5/0         │ groups 100%    │ 2 nvidia.com/gpu   │ 3m30s │
│ 6    │ 4    │ -  │ 4/0         │ groups 100%    │ -                  │ 3m30s │
└──────┴──────┴────┴─────────────┴────────────────┴────────────────────┴───────┘
peak extra accelerators: 2 nvidia.com/gpu
free on the eligible nodes: 1 nvidia.com/gpu
observed time to ready: 42s; ETA 3m30s
warning: needs 2 more nvidia.com/gpu than the groups hold now, the eligible nodes have 1 free"""


def test_rollout_table_with_a_surge_that_does_not_fit() -> None:
    plan = lws_plan(
        gpu_lws().obj(), gpu_lws().worker_image(NEW_IMAGE).obj(), time_to_ready=42.0, free={GPU: 1}
    )
    assert rendered(plan) == ROLLOUT


SCALE_ONLY = """\
LeaderWorkerSet default/plan  scale only  4 → 6 groups, no group is recreated
┏━━━━━━┳━━━━━━┳━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━┓
┃ step ┃ down ┃ up   ┃ updated/old ┃ ready capacity ┃ extra accelerators ┃ ETA     ┃
┡━━━━━━╇━━━━━━╇━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━┩
│ 1    │ -    │ 4, 5 │ 0/6         │ groups 66%     │ 4 nvidia.com/gpu   │ unknown │
└──────┴──────┴──────┴─────────────┴────────────────┴────────────────────┴─────────┘
peak extra accelerators: 4 nvidia.com/gpu
free on the eligible nodes: unknown
observed time to ready: unknown; ETA unknown"""


def test_scale_only_table() -> None:
    assert rendered(lws_plan(gpu_lws().obj(), gpu_lws(6).obj())) == SCALE_ONLY


def test_no_rollout_prints_one_line_and_no_table() -> None:
    text = rendered(lws_plan(gpu_lws().obj(), gpu_lws(unavailable=2).obj()))
    assert text == "LeaderWorkerSet default/plan  no rollout  the change does not alter the group template"


DS_ROLLOUT = """\
DisaggregatedSet default/pd  rollout  rolling update from revision cd746032 to f2ded0d8, 1 slice(s)
in parallel
┏━━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━┓
┃      ┃                ┃                 ┃             ┃                ┃ extra           ┃       ┃
┃ step ┃ down           ┃ up              ┃ updated/old ┃ ready capacity ┃ accelerators    ┃ ETA   ┃
┡━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━┩
│ 1    │ -              │ prefill +1,     │ 2/6         │ prefill 100%,  │ 3               │ 20s   │
│      │                │ decode +1       │             │ decode 100%    │ nvidia.com/gpu  │       │
│ 2    │ decode -1      │ -               │ 2/5         │ prefill 150%,  │ 1               │ 20s   │
│      │                │                 │             │ decode 100%    │ nvidia.com/gpu  │       │
│ 3    │ prefill -1     │ decode +1       │ 3/4         │ prefill 100%,  │ 2               │ 40s   │
│      │                │                 │             │ decode 100%    │ nvidia.com/gpu  │       │
│ 4    │ decode -1      │ prefill +1      │ 4/3         │ prefill 100%,  │ 1               │ 1m00s │
│      │                │                 │             │ decode 100%    │ nvidia.com/gpu  │       │
│ 5    │ -              │ decode +1       │ 5/3         │ prefill 150%,  │ 3               │ 1m20s │
│      │                │                 │             │ decode 100%    │ nvidia.com/gpu  │       │
│ 6    │ decode -1      │ -               │ 5/2         │ prefill 150%,  │ 1               │ 1m20s │
│      │                │                 │             │ decode 100%    │ nvidia.com/gpu  │       │
│ 7    │ -              │ decode +1       │ 6/2         │ prefill 150%,  │ 3               │ 1m40s │
│      │                │                 │             │ decode 100%    │ nvidia.com/gpu  │       │
│ 8    │ prefill -1,    │ -               │ 6/0         │ prefill 100%,  │ -               │ 1m40s │
│      │ decode -1      │                 │             │ decode 100%    │                 │       │
└──────┴────────────────┴─────────────────┴─────────────┴────────────────┴─────────────────┴───────┘
peak extra accelerators: 3 nvidia.com/gpu
free on the eligible nodes: 2 nvidia.com/gpu
observed time to ready: 20s; ETA 1m40s
warning: needs 3 more nvidia.com/gpu than the groups hold now, the eligible nodes have 2 free"""


def test_ds_table_counts_replicas_per_role_against_their_target() -> None:
    new = ds("pd", gpu_role("prefill", 2, 1, NEW_IMAGE), gpu_role("decode", 4, 2, NEW_IMAGE))
    assert rendered(ds_plan(LIVE_DS, new, time_to_ready=20.0, free={GPU: 2})) == DS_ROLLOUT


def test_json_document() -> None:
    plan = lws_plan(
        gpu_lws().obj(), gpu_lws().worker_image(NEW_IMAGE).obj(), time_to_ready=10.0, free={GPU: 8}
    )
    doc = json.loads(to_json(plan))
    assert doc["change"] == "rollout"
    assert doc["eta_seconds"] == 50.0
    assert doc["warnings"] == []
    assert doc["free_accelerators"] == {GPU: 8}
    assert [(s["updated"], s["old"]) for s in doc["steps"]] == [
        (1, 4),
        (2, 3),
        (3, 2),
        (4, 1),
        (5, 0),
        (4, 0),
    ]
    assert doc["steps"][0] == {
        "down": [],
        "up": ["4"],
        "capacity": {"groups": 100},
        "extra_accelerators": {GPU: 2},
        "updated": 1,
        "old": 4,
        "waits_for_ready": True,
        "eta_seconds": 10.0,
    }


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(
            "kind: Deployment\nmetadata: {name: x}\n",
            "kind must be LeaderWorkerSet or DisaggregatedSet",
            id="kind",
        ),
        pytest.param("kind: LeaderWorkerSet\nmetadata: {}\n", "metadata.name is required", id="name"),
        pytest.param(
            "kind: LeaderWorkerSet\n---\nkind: LeaderWorkerSet\n",
            "expected exactly one object, found 2",
            id="two",
        ),
    ],
)
def test_a_bad_manifest_is_refused_naming_the_rule(tmp_path: Path, text: str, want: str) -> None:
    path = tmp_path / "new.yaml"
    path.write_text(text)
    with pytest.raises(PlanInputError, match=want):
        load_manifest(path)


def test_the_command_exits_1_with_the_reason_on_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "new.yaml"
    path.write_text("kind: Deployment\nmetadata: {name: x}\n")
    cli_app.register()
    result = CliRunner().invoke(cli_app.app, ["plan", "-f", str(path)])
    assert result.exit_code == 1
    assert "kind must be LeaderWorkerSet or DisaggregatedSet" in result.output
