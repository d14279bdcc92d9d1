"""`lws cluster up --workload-api`: the gates and runtime-config every component gets."""

import pytest

from leaderworkerset.devcluster.cluster import ClusterOptions


@pytest.mark.parametrize(
    ("gates", "runtime", "want_gates", "want_runtime"),
    [
        pytest.param("", "", "GenericWorkload=true", "scheduling.k8s.io/v1beta1=true", id="from nothing"),
        pytest.param(
            "MaxUnavailableStatefulSet=true",
            "api/all=true",
            "MaxUnavailableStatefulSet=true,GenericWorkload=true",
            "api/all=true,scheduling.k8s.io/v1beta1=true",
            id="keeps what was asked for",
        ),
    ],
)
def test_with_workload_api(gates: str, runtime: str, want_gates: str, want_runtime: str) -> None:
    got = ClusterOptions(feature_gates=gates, runtime_config=runtime).with_workload_api()
    assert (got.feature_gates, got.runtime_config) == (want_gates, want_runtime)
