"""`lws status` renders Hash groups by key and hostname, with their pods under them."""

from __future__ import annotations

from rich.console import Console

from leaderworkerset.api import constants as c
from leaderworkerset.cli.views.lws import Snapshot, render
from tests.support.builders import cached_lws, leader_pod

KEY = "cd" * 20


def test_hash_groups_are_shown_by_key_and_hostname() -> None:
    lws = cached_lws("lws").replicas(1).size(1).obj()
    lws["spec"]["groupIdentity"] = c.GROUP_IDENTITY_HASH
    leader = leader_pod("lws", 0, "rev", name="lws-5d8f9c7b6-x2x4z", group_index=KEY)
    leader["metadata"]["annotations"] = {c.ANNOTATION_GROUP_IDENTITY: c.GROUP_IDENTITY_HASH}
    leader["spec"]["hostname"] = f"lws-{KEY[:8]}"
    deploy = {"metadata": {"name": "lws", "labels": {c.LABEL_TEMPLATE_REVISION_HASH: "rev"}}}
    console = Console(width=200, record=True, color_system=None)
    console.print(render(Snapshot(lws, [leader], [], deploy)))
    text = console.export_text()
    assert "revision rev" in text
    assert f"group {KEY[:8]}  lws-5d8f9c7b6-x2x4z (lws-{KEY[:8]})  rev rev  ready" in text
    assert "lws-5d8f9c7b6-x2x4z leader Running" in text  # the pod line under its group
