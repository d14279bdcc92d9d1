"""Effective pod requests and a group's minResources, as Kubernetes' PodRequests."""

from dataclasses import dataclass, field
from typing import Any

import pytest

from leaderworkerset.core.gocompat.quantity import add_quantities, compare_quantities, parse_quantity
from leaderworkerset.core.scheduling.podrequests import RequestsError, group_min_resources, pod_requests
from tests.support.builders import cached_lws


def _container(name: str, restart_policy: str | None = None, **requests: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "resources": {"requests": dict(requests)}}
    if restart_policy:
        container["restartPolicy"] = restart_policy
    return container


@dataclass(frozen=True)
class RequestsCase:
    spec: dict[str, Any]
    want: dict[str, str] = field(default_factory=dict)


REQUEST_CASES = [
    pytest.param(RequestsCase({}, {}), id="no containers: nothing"),
    pytest.param(
        RequestsCase(
            {"containers": [_container("a", cpu="100m"), _container("b", cpu="250m", memory="1Gi")]},
            {"cpu": "350m", "memory": "1Gi"},
        ),
        id="containers are summed",
    ),
    pytest.param(
        RequestsCase(
            {"containers": [_container("a", cpu="100m")], "initContainers": [_container("init", cpu="2")]},
            {"cpu": "2"},
        ),
        id="a bigger init container sets the peak",
    ),
    pytest.param(
        RequestsCase(
            {"containers": [_container("a", cpu="1")], "initContainers": [_container("init", cpu="500m")]},
            {"cpu": "1"},
        ),
        id="a smaller init container does not add",
    ),
    pytest.param(
        RequestsCase(
            {
                "containers": [_container("a", cpu="1")],
                "initContainers": [
                    _container("sidecar", "Always", cpu="500m"),
                    _container("init", cpu="1200m"),
                ],
            },
            {"cpu": "1700m"},
        ),
        id="init container runs with earlier sidecars: 1.2 + 0.5 beats 1 + 0.5",
    ),
    pytest.param(
        RequestsCase(
            {
                "containers": [_container("a", cpu="1")],
                "initContainers": [
                    _container("init", cpu="1200m"),
                    _container("sidecar", "Always", cpu="500m"),
                ],
            },
            {"cpu": "1500m"},
        ),
        id="a sidecar started later does not run with the init container",
    ),
    pytest.param(
        RequestsCase(
            {"containers": [_container("a", cpu="100m")], "overhead": {"cpu": "250m", "memory": "120Mi"}},
            {"cpu": "350m", "memory": "120Mi"},
        ),
        id="overhead comes on top",
    ),
    pytest.param(
        RequestsCase(
            {
                "containers": [_container("a", cpu="100m", memory="64Mi", **{"nvidia.com/gpu": "1"})],
                "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
            },
            {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"},
        ),
        id="pod-level cpu and memory replace the container sum, extended resources stay",
    ),
]


@pytest.mark.parametrize("case", REQUEST_CASES)
def test_pod_requests(case: RequestsCase) -> None:
    got = {name: q.canonical() for name, q in pod_requests(case.spec).items()}
    assert got == case.want


def test_request_table_size() -> None:
    assert len(REQUEST_CASES) == 8


@pytest.mark.parametrize(
    ("leader", "size", "want"),
    [
        pytest.param(None, 3, {"cpu": "300m"}, id="upstream: size 3 of 100m workers, no leader template"),
        pytest.param(
            {"containers": [_container("l", cpu="1", memory="2Gi")]},
            3,
            {"cpu": "1200m", "memory": "2Gi"},
            id="leader template plus two workers",
        ),
        pytest.param(
            {"containers": [_container("l", cpu="1")]}, 1, {"cpu": "1"}, id="size 1: the leader alone"
        ),
    ],
)
def test_group_min_resources(leader: dict[str, Any] | None, size: int, want: dict[str, str]) -> None:
    builder = cached_lws().size(size).worker_template({"spec": {"containers": [_container("w", cpu="100m")]}})
    if leader is not None:
        builder.leader_template(leader)
    assert group_min_resources(builder.obj()) == want


def test_bad_quantity_names_the_field() -> None:
    lws = cached_lws().worker_template({"spec": {"containers": [_container("w", cpu="lots")]}}).obj()
    with pytest.raises(
        RequestsError, match=r"spec\.leaderWorkerTemplate\.workerTemplate\.spec\.containers\[0\]"
    ):
        group_min_resources(lws)


@pytest.mark.parametrize(
    ("a", "b", "want_sum", "want_cmp"),
    [
        pytest.param("100m", "1", "1100m", -1, id="milli plus whole"),
        pytest.param("1Gi", "512Mi", "1536Mi", 1, id="binary keeps binary"),
        pytest.param("0", "1Gi", "1Gi", -1, id="zero takes the other format"),
        pytest.param("1k", "1000", "2k", 0, id="equal values compare 0"),
    ],
)
def test_quantity_arithmetic(a: str, b: str, want_sum: str, want_cmp: int) -> None:
    qa, qb = parse_quantity(a), parse_quantity(b)
    assert add_quantities(qa, qb).canonical() == want_sum
    assert compare_quantities(qa, qb) == want_cmp
