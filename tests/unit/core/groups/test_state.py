"""Group state and the spec accessors (core.groups.state, core.objects), shared by the controllers
and the webhooks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.core.objects import lws_replicas, lws_size, spec_replicas, spec_size


@dataclass(frozen=True)
class Case:
    spec: dict[str, Any]
    want_replicas: int
    want_size: int


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Case({"replicas": 3, "leaderWorkerTemplate": {"size": 4}}, 3, 4), id="set"),
        pytest.param(Case({"replicas": 0, "leaderWorkerTemplate": {"size": 0}}, 0, 0), id="zero is kept"),
        pytest.param(Case({}, 1, 1), id="absent reads as the CRD default 1"),
        pytest.param(Case({"replicas": None, "leaderWorkerTemplate": None}, 1, 1), id="null as absent"),
        pytest.param(
            Case({"replicas": "3", "leaderWorkerTemplate": {"size": True}}, 1, 1),
            id="mistyped reads as the default (admission reports it)",
        ),
        pytest.param(Case({"leaderWorkerTemplate": []}, 1, 1), id="template of the wrong type"),
    ],
)
def test_spec_accessors(case: Case) -> None:
    assert (spec_replicas(case.spec), spec_size(case.spec)) == (case.want_replicas, case.want_size)
    lws = {"spec": case.spec}
    assert (lws_replicas(lws), lws_size(lws)) == (case.want_replicas, case.want_size)


def test_lws_without_spec_reads_defaults() -> None:
    assert (lws_replicas({}), lws_size({"spec": None})) == (1, 1)
