"""`lws status` says why each non-ready group is not ready: the rich tree at a fixed width, the
`-o json` document, and the plain text printed when stdout is not a terminal."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

from rich.console import Console

from leaderworkerset.api import constants as c
from leaderworkerset.cli.status import Output, as_text
from leaderworkerset.cli.views.lws import Snapshot, document, render
from tests.support.builders import as_worker_of, cached_lws, leader_pod, worker_statefulset

Obj = dict[str, Any]
GPU_MESSAGE = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."


def _worker(leader: Obj, index: int, *, node: str | None) -> Obj:
    pod = copy.deepcopy(leader)
    pod["metadata"]["name"] = f"{leader['metadata']['name']}-{index}"
    pod["metadata"]["uid"] = f"uid-{pod['metadata']['name']}"
    pod["metadata"]["labels"][c.LABEL_WORKER_INDEX] = str(index)
    as_worker_of(pod, leader)
    if node:
        pod["spec"]["nodeName"] = node
    else:
        pod["spec"].pop("nodeName", None)
        pod["status"] = {"phase": "Pending", "conditions": []}
    return pod


def snapshot() -> Snapshot:
    """Group 0 ready; group 1's worker cannot be scheduled (the scheduler said why)."""
    lws = cached_lws("lws").replicas(2).size(2).obj()
    lws["status"] = {
        "readyReplicas": 1,
        "updatedReplicas": 2,
        "conditions": [{"type": "Progressing", "status": "True"}],
    }
    leader_sts = {"metadata": {"name": "lws", "labels": {c.LABEL_TEMPLATE_REVISION_HASH: "rev"}}}
    pods, stss = [], [leader_sts]
    for index, worker_node in ((0, "kwok-node-1"), (1, None)):
        leader = leader_pod("lws", index, "rev")
        leader["spec"]["nodeName"] = f"kwok-node-{index}"
        pods += [leader, _worker(leader, 1, node=worker_node)]
        stss.append(worker_statefulset(leader, ready=worker_node is not None))
    return Snapshot(lws, pods, stss, failures={"uid-lws-1-1": GPU_MESSAGE})


def plain(view: Any) -> str:
    """As printed to a pipe (`lws status -w | tee log`): a narrow width must not cut lines."""
    console = Console(width=60, file=io.StringIO(), color_system=None)
    assert not console.is_terminal
    return as_text(console, view)


def terminal(view: Any, width: int = 100) -> str:
    console = Console(width=width, file=io.StringIO(), force_terminal=True, color_system=None)
    return "".join(line.rstrip() + "\n" for line in as_text(console, view).splitlines())  # wrap pads


def test_the_tree_names_the_cause_of_each_non_ready_group() -> None:
    assert plain(render(snapshot())) == (
        "LeaderWorkerSet default/lws  replicas 1/2 ready, 2 updated  size 2  revision rev  Progressing\n"
        "├── group 0  lws-0  rev rev  ready\n"
        "│   ├── ● lws-0 leader Running on kwok-node-0\n"
        "│   └── ● lws-0-1 worker Running on kwok-node-1\n"
        f"└── group 1  lws-1  rev rev  not ready — worker lws-1-1 unschedulable: {GPU_MESSAGE}\n"
        "    ├── ● lws-1 leader Running on kwok-node-1\n"
        "    └── ○ lws-1-1 worker Pending on unscheduled\n"
    )


def test_json_document_has_groups_pods_ready_and_reason() -> None:
    doc = document(snapshot())
    assert json.loads(json.dumps(doc)) == doc  # serialisable as is
    assert (doc["kind"], doc["name"], doc["replicas"], doc["readyReplicas"]) == (
        "LeaderWorkerSet",
        "lws",
        2,
        1,
    )
    assert [(g["name"], g["ready"], g["cause"], g["reason"]) for g in doc["groups"]] == [
        ("0", True, None, None),
        ("1", False, "FailedScheduling", f"worker lws-1-1 unschedulable: {GPU_MESSAGE}"),
    ]
    assert doc["groups"][1]["pods"] == [
        {
            "name": "lws-1",
            "role": "leader",
            "phase": "Running",
            "node": "kwok-node-1",
            "ready": True,
            "restarts": 0,
        },
        {
            "name": "lws-1-1",
            "role": "worker",
            "phase": "Pending",
            "node": None,
            "ready": False,
            "restarts": 0,
        },
    ]


def test_off_a_terminal_the_tree_is_plain_text_and_json_is_one_line() -> None:
    text = plain(render(snapshot()))
    assert "\x1b" not in text
    assert "\n\n" not in text
    assert len(text.splitlines()) == 7  # one line per node of the tree, never wrapped
    line = plain(document(snapshot()))
    assert line.count("\n") == 1
    assert json.loads(line)["groups"][1]["cause"] == "FailedScheduling"
    assert Output("json") is Output.JSON


def test_on_a_terminal_the_tree_wraps_at_its_width() -> None:
    assert terminal(render(snapshot())) == (
        "LeaderWorkerSet default/lws  replicas 1/2 ready, 2 updated  size 2  revision rev  Progressing\n"
        "├── group 0  lws-0  rev rev  ready\n"
        "│   ├── ● lws-0 leader Running on kwok-node-0\n"
        "│   └── ● lws-0-1 worker Running on kwok-node-1\n"
        "└── group 1  lws-1  rev rev  not ready — worker lws-1-1 unschedulable: 0/4 nodes are available: 4\n"
        "    Insufficient nvidia.com/gpu.\n"
        "    ├── ● lws-1 leader Running on kwok-node-1\n"
        "    └── ○ lws-1-1 worker Pending on unscheduled\n"
    )
