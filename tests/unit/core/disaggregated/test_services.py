"""Private per-revision Services."""

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated import services as sv
from tests.support.builders import DisaggregatedSetBuilder
from tests.unit.core.disaggregated.helpers import DS_UID, NS, child

REV = "aaaaaaaa"
ROLES = ["prefill", "decode"]


@pytest.mark.parametrize(
    ("decode_ready", "want_names"),
    [
        pytest.param(0, [], id="waits until every role serves"),
        pytest.param(1, [f"test-ds-0-{REV}-prefill-prv", f"test-ds-0-{REV}-decode-prv"], id="one per role"),
    ],
)
def test_wanted_services(decode_ready: int, want_names: list[str]) -> None:
    target = [child("prefill", ready=1), child("decode", ready=decode_ready)]
    assert [s["metadata"]["name"] for s in sv.wanted_services(ROLES, target)] == want_names


def test_service_selects_one_revision_of_one_slice_and_is_owned_by_the_lws() -> None:
    lws = child("decode", slice_index=1, ready=1)
    got = sv.build_private_service(lws)
    selector = {
        c.LABEL_DS_NAME: "test-ds",
        c.LABEL_DS_ROLE: "decode",
        c.LABEL_DS_REVISION: REV,
        c.LABEL_DS_SLICE: "1",
    }
    assert got["spec"] == {"clusterIP": "None", "selector": selector}
    assert got["metadata"]["labels"] == selector
    assert got["metadata"]["ownerReferences"] == [
        {
            "apiVersion": c.LWS_API_VERSION,
            "kind": c.LWS_KIND,
            "name": lws["metadata"]["name"],
            "uid": lws["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _svc(name: str, owner_uid: str | None, role: str = "decode") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {c.LABEL_DS_NAME: "test-ds", c.LABEL_DS_ROLE: role}}
    if owner_uid is not None:
        meta["ownerReferences"] = [{"uid": owner_uid, "controller": True}]
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("owner", "name", "want"),
    [
        pytest.param("lws", "live-prv", "ours", id="LWS-owned"),
        pytest.param(DS_UID, "live-prv", "migrate", id="DS-owned legacy: hand to the LWS"),
        pytest.param(DS_UID, "gone-prv", "delete", id="DS-owned orphan"),
        pytest.param("other", "live-prv", "conflict", id="foreign owner"),
        pytest.param(None, "live-prv", "conflict", id="no owner"),
    ],
)
def test_judge_existing(owner: str | None, name: str, want: str) -> None:
    ds = DisaggregatedSetBuilder(NS).uid(DS_UID).obj()
    lws = {"metadata": {"name": "live", "uid": "lws"}}
    assert sv.judge_existing(_svc(name, owner), ds, {"live": lws}).kind == want
