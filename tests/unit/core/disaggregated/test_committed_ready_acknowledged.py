"""Ready capacity a child LWS commits to a DisaggregatedSet rollout, read from the cached object.

Upstream main after v1.0 (`pkg/replicagroups`, retained readiness) credits no Ready group of an LWS
that is being deleted or whose controller has not yet observed its latest generation; v1.0 read the
counts as they stood. Ours follows main (docs/compatibility.md, "Upstream main after v1.0").
"""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.core.disaggregated.rollout import committed_ready
from leaderworkerset.core.disaggregated.rollout_inputs import child_view
from tests.unit.core.disaggregated.helpers import child


def _lws(
    spec: int, status: int, ready: int, *, generation: int, observed: int | None, deleting: bool = False
) -> dict[str, Any]:
    lws = child("decode", spec=spec, status=status, ready=ready, deleting=deleting)
    lws["metadata"]["generation"] = generation
    if observed is not None:
        lws.setdefault("status", {})["observedGeneration"] = observed
    return lws


CASES = [
    # (spec, status.replicas, ready, generation, observedGeneration, deleting) -> committed
    pytest.param(_lws(3, 3, 3, generation=2, observed=2), 3, id="observed: v1.0's count"),
    pytest.param(_lws(3, 3, 3, generation=2, observed=5), 3, id="observed ahead (a cache lag of the spec)"),
    pytest.param(
        _lws(3, 4, 3, generation=2, observed=2), 2, id="observed: a pending removal still discounts"
    ),
    pytest.param(_lws(2, 3, 3, generation=3, observed=2), 0, id="scale-down not yet seen: nothing"),
    pytest.param(
        _lws(3, 3, 3, generation=4, observed=2), 0, id="3 -> 2 -> 3 not yet seen looks current: nothing"
    ),
    pytest.param(_lws(3, 3, 3, generation=1, observed=None), 0, id="counts without observedGeneration"),
    pytest.param(_lws(3, 3, 3, generation=2, observed=2, deleting=True), 0, id="being deleted: nothing"),
]


@pytest.mark.parametrize(("lws", "want"), CASES)
def test_committed_ready_needs_the_latest_generation_observed(lws: dict[str, Any], want: int) -> None:
    assert committed_ready(child_view(lws)) == want


def test_every_case_ran() -> None:
    assert len(CASES) == 7
