"""Names and labels of DisaggregatedSet children."""

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated import naming


@pytest.mark.parametrize(
    ("ds", "slice_index", "revision", "role", "want"),
    [
        pytest.param("my-ds", 0, "abc12345", "prefill", "my-ds-0-abc12345-prefill", id="slice 0"),
        pytest.param("my-ds", 12, "abc12345", "decode", "my-ds-12-abc12345-decode", id="two-digit slice"),
    ],
)
def test_child_lws_name(ds: str, slice_index: int, revision: str, role: str, want: str) -> None:
    assert naming.child_lws_name(ds, slice_index, revision, role) == want
    assert naming.private_service_name(want) == want + "-prv"


def test_child_labels_are_upstreams_five() -> None:
    assert naming.child_labels("my-ds", 2, "abc12345", "decode") == {
        "app": "my-ds-2-decode",
        "disaggregatedset.x-k8s.io/name": "my-ds",
        "disaggregatedset.x-k8s.io/role": "decode",
        "disaggregatedset.x-k8s.io/slice": "2",
        "disaggregatedset.x-k8s.io/revision": "abc12345",
    }


def test_scaler_name_and_selector() -> None:
    assert naming.scaler_name("my-ds", "decode") == "my-ds-decode"
    assert naming.scaler_selector("my-ds", "decode") == (
        "disaggregatedset.x-k8s.io/name=my-ds,disaggregatedset.x-k8s.io/role=decode,"
        "leaderworkerset.sigs.k8s.io/worker-index=0"
    )


@pytest.mark.parametrize(
    ("labels", "want"),
    [
        pytest.param({c.LABEL_DS_SLICE: "3"}, 3, id="decimal"),
        pytest.param({}, None, id="legacy: no slice label"),
        pytest.param({c.LABEL_DS_SLICE: "x"}, None, id="garbage"),
        pytest.param({c.LABEL_DS_SLICE: "-1"}, None, id="negative"),
    ],
)
def test_slice_of(labels: dict[str, str], want: int | None) -> None:
    assert naming.slice_of({"metadata": {"labels": labels}}) == want


@pytest.mark.parametrize(
    ("spec", "want"),
    [pytest.param({}, 1, id="default 1"), pytest.param({"slices": 4}, 4, id="explicit")],
)
def test_slice_count(spec: dict[str, int], want: int) -> None:
    assert naming.slice_count({"spec": spec}) == want
