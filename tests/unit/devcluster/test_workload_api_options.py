"""`lws cluster up --workload-api`: the gates and runtime-config every component gets, and the
versions that have no such API."""

import pytest

from leaderworkerset.devcluster.cluster import ClusterError, ClusterOptions


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
    got = ClusterOptions(feature_gates=gates, runtime_config=runtime).with_workload_api("1.37")
    assert (got.feature_gates, got.runtime_config) == (want_gates, want_runtime)


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_the_workload_api_is_refused_below_1_37_naming_both_versions(version: str) -> None:
    with pytest.raises(
        ClusterError, match=rf"needs Kubernetes 1\.37 or newer; this cluster is v{version}\.\d+"
    ):
        ClusterOptions().with_workload_api(version)


def test_the_1_38_beta_gets_the_same_gates_and_runtime_config_as_1_37() -> None:
    got = ClusterOptions().with_workload_api("1.38")
    assert (got.feature_gates, got.runtime_config) == (
        "GenericWorkload=true",
        "scheduling.k8s.io/v1beta1=true",
    )
