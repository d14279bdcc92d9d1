"""When `lws install` considers the manager ready (pure predicates over API objects)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from lightkube.models.apps_v1 import DeploymentSpec, DeploymentStatus
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.resources.apps_v1 import Deployment

from leaderworkerset.install.apply import deployment_ready


@dataclass(frozen=True)
class Case:
    generation: int
    observed: int
    updated: int
    available: int
    want_ready: bool


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Case(1, 1, 2, 2, True), id="all-updated-and-available"),
        pytest.param(Case(2, 1, 2, 2, False), id="new-generation-not-observed"),
        pytest.param(Case(1, 1, 2, 1, False), id="one-replica-unavailable"),
        pytest.param(Case(1, 1, 1, 2, False), id="rollout-in-progress"),
    ],
)
def test_deployment_ready(case: Case) -> None:
    deployment = Deployment(
        metadata=ObjectMeta(name="lws-controller-manager", generation=case.generation),
        spec=DeploymentSpec(replicas=2, selector=LabelSelector(), template=None),  # type: ignore[arg-type]
        status=DeploymentStatus(
            observedGeneration=case.observed, updatedReplicas=case.updated, availableReplicas=case.available
        ),
    )
    assert deployment_ready(deployment) is case.want_ready
